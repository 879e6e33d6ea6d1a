package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// declKind says what Go declaration a schema $def (or a name the generator makes up) becomes.
type declKind int

const (
	kindStruct   declKind = iota // object: a struct
	kindNewtype                  // string or integer: a named scalar type
	kindEnum                     // string constants: a named string type and its constants
	kindUnion                    // oneOf/anyOf of objects or values: a sealed interface
	kindRaw                      // any JSON: an alias of json.RawMessage
	kindDistinct                 // a union variant sharing another $def's payload: type V P
	kindValue                    // a value variant of an untagged union: a named scalar or slice type
	kindUnknown                  // the catch-all variant of a tagged union
	kindSupport                  // declared by the hand-written support code (RequestID)
)

// decl is one Go type to emit.
type decl struct {
	Name string // Go name
	Def  string // schema $def, "" when made up by the generator
	Kind declKind
	node *node

	Doc        string // the schema's description (Markdown)
	Deprecated bool

	Fields []*field // struct
	Flat   *union   // struct: a union merged into this object (field Fields[FlatIdx])

	Under string // newtype, value: the underlying Go type

	Values    []string // enum
	ValueDocs []string // enum: the description of each value
	Open      bool     // enum: the schema allows other strings too

	Union *union // union, unknown

	Payload *decl // distinct: the $def it copies

	Implements []*union // unions this type is a variant of
	Method     *method  // struct: the method it is the params or result of
	MethodRole string   // "request", "response" or "notification"
}

// goType is the Go type of a field or element.
type goType struct {
	Kind string // "named", "builtin", "slice", "map", "ptr", "raw", "meta"
	Name string // named, builtin
	Elem *goType
	Decl *decl // named
}

func (t *goType) String() string {
	switch t.Kind {
	case "slice":
		return "[]" + t.Elem.String()
	case "map":
		return "map[string]" + t.Elem.String()
	case "ptr":
		return "*" + t.Elem.String()
	case "raw":
		return "json.RawMessage"
	case "meta":
		return "Meta"
	}
	return t.Name
}

// union returns the union t names, if it is one.
func (t *goType) union() *union {
	if t.Kind == "named" && t.Decl.Kind == kindUnion {
		return t.Decl.Union
	}
	return nil
}

// field is one struct field.
type field struct {
	GoName, JSON string
	Type         *goType
	Required     bool
	Doc          string // the schema's description (Markdown)
	Deprecated   bool
	Lenient      bool // x-deserialize-default-on-error
	SkipInvalid  bool // x-deserialize-skip-invalid-items
	NullDefault  bool // x-deserialize-default-on-null
	Omit         string
}

// union is a sealed interface and its variants.
type union struct {
	Name     string // Go interface
	Def      string // schema $def or the def it is inlined into
	Tag      string // discriminator property; "" = untagged, variants are tried in order
	Flat     bool   // branches are merged into the containing object
	Variants []*variant
	Unknown  *decl // tagged: catch-all for unknown discriminator values
}

type variant struct {
	Tag     string   // discriminator value; "" = written without one (the default variant)
	Aliases []string // more discriminator values that select this variant
	Decl    *decl
	Doc     string // the description of the union's branch
}

// method is one x-method of the schema.
type method struct {
	Name         string
	Side         string
	Request      *decl
	Response     *decl // nil for notifications
	Notification bool
	Doc          string // the description the schema gives the method where it lists the messages
}

// skipped is a $def that gets no Go type.
type skipped struct{ Def, Reason string }

type model struct {
	decls   map[string]*decl // by Go name
	byDef   map[string]*decl
	unions  map[string]*union // by Go name
	methods []*method
	skipped []skipped
}

func buildModel(s *schema) (*model, error) {
	m := &model{decls: map[string]*decl{}, byDef: map[string]*decl{}, unions: map[string]*union{}}
	// Pass 1: one decl per $def, so that pass 2 can resolve references.
	for _, name := range s.defNames() {
		n := s.Defs[name]
		if r, ok := skipReasons[name]; ok {
			m.skipped = append(m.skipped, skipped{name, r})
			continue
		}
		d := &decl{Name: goName(name), Def: name, node: n, Doc: n.Description, Deprecated: n.Deprecated}
		switch {
		case name == "RequestId":
			d.Kind = kindSupport
		case isEmpty(n):
			d.Kind = kindRaw
		case n.Type.nonNull() == "object":
			d.Kind = kindStruct
		case n.Type.nonNull() == "string" && n.Const == nil:
			d.Kind, d.Under = kindNewtype, "string"
		case n.Type.nonNull() == "integer":
			d.Kind, d.Under = kindNewtype, intType(n.Format)
		case isStringEnum(n):
			d.Kind = kindEnum
			d.Values, d.ValueDocs, d.Open = enumValues(n)
		case len(n.AnyOf) > 0 || len(n.OneOf) > 0:
			d.Kind = kindUnion
		default:
			return nil, fmt.Errorf("%s: unsupported schema shape", name)
		}
		if err := m.add(d); err != nil {
			return nil, err
		}
	}
	// Pass 2: unions (they add variant types), then struct fields, then methods.
	for _, name := range s.defNames() {
		d := m.byDef[name]
		if d == nil {
			continue
		}
		var err error
		switch d.Kind {
		case kindUnion:
			d.Union, err = m.buildUnion(d.Name, name, branches(d.node), false)
		case kindStruct:
			if len(branches(d.node)) > 0 {
				fu, ok := flatUnions[name]
				if !ok {
					return nil, fmt.Errorf("%s: object with oneOf/anyOf needs an entry in flatUnions", name)
				}
				if u := m.unions[fu.Iface]; u != nil {
					d.Flat = u // the same inline union appears in several objects
				} else if d.Flat, err = m.buildUnion(fu.Iface, name, branches(d.node), true); err == nil {
					m.addUnionDecl(d.Flat, "")
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, d := range m.sorted() {
		if d.Kind == kindStruct && d.node != nil {
			if err := m.buildFields(d); err != nil {
				return nil, fmt.Errorf("%s: %w", d.Def, err)
			}
		}
	}
	if err := m.buildMethods(s); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *model) add(d *decl) error {
	if old := m.decls[d.Name]; old != nil {
		return fmt.Errorf("two types named %s (%s and %s)", d.Name, old.Def, d.Def)
	}
	m.decls[d.Name] = d
	if d.Def != "" {
		m.byDef[d.Def] = d
	}
	return nil
}

// addUnionDecl declares the interface of a union the schema writes inline.
func (m *model) addUnionDecl(u *union, def string) {
	m.decls[u.Name] = &decl{Name: u.Name, Def: def, Kind: kindUnion, Union: u}
}

func (m *model) sorted() []*decl {
	out := make([]*decl, 0, len(m.decls))
	for _, d := range m.decls {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func isEmpty(n *node) bool {
	return n.Ref == "" && n.Type == nil && n.Properties == nil && n.AnyOf == nil && n.OneOf == nil && n.AllOf == nil
}

func branches(n *node) []*node {
	if len(n.OneOf) > 0 {
		return n.OneOf
	}
	return n.AnyOf
}

func intType(format string) string {
	switch format {
	case "uint16", "uint32", "uint64", "int32", "int64":
		return format
	}
	return "int64"
}

// isStringEnum reports whether every branch is a string constant, or a plain string (an open enum).
func isStringEnum(n *node) bool {
	bs := branches(n)
	if len(bs) == 0 {
		return false
	}
	consts := 0
	for _, b := range bs {
		if _, ok := b.constString(); ok {
			consts++
		} else if !(b.Type.nonNull() == "string" && b.Properties == nil) {
			return false
		}
	}
	return consts > 0
}

func enumValues(n *node) (values, docs []string, open bool) {
	for _, b := range branches(n) {
		if s, ok := b.constString(); ok {
			values = append(values, s)
			docs = append(docs, b.Description)
		} else {
			open = true
		}
	}
	return values, docs, open
}

// buildUnion classifies the branches of a oneOf/anyOf. A branch that pins a property to a
// constant makes the union tagged by that property; otherwise variants are tried in order.
func (m *model) buildUnion(name, def string, bs []*node, flat bool) (*union, error) {
	u := &union{Name: name, Def: def, Flat: flat}
	for _, b := range bs {
		for _, p := range b.Properties {
			if _, ok := p.Node.constString(); ok {
				if u.Tag != "" && u.Tag != p.Name {
					return nil, fmt.Errorf("two discriminators %q and %q", u.Tag, p.Name)
				}
				u.Tag = p.Name
			}
		}
	}
	m.unions[name] = u
	if u.Tag == "" {
		return u, m.untaggedVariants(u, bs)
	}
	return u, m.taggedVariants(u, bs)
}

func (m *model) taggedVariants(u *union, bs []*node) error {
	refCount := map[string]int{}
	for _, b := range bs {
		if r := b.ref(); r != "" {
			refCount[r]++
		}
	}
	hasDefault := false
	for _, b := range bs {
		tag, tagged := b.Properties.get(u.Tag).constString()
		if b.Properties.get(u.Tag) != nil && !tagged {
			continue // the schema's explicit catch-all for other values: our Unknown variant
		}
		v := &variant{Tag: tag, Doc: b.Description}
		r := b.ref()
		switch {
		case r != "" && refCount[r] > 1:
			// Several tags share one payload: each gets its own Go type so that encoding knows the tag.
			p := m.byDef[r]
			v.Decl = &decl{Name: goName(tag), Kind: kindDistinct, Payload: p, Doc: b.Description, Deprecated: b.Deprecated}
			if err := m.add(v.Decl); err != nil {
				return err
			}
		case r != "":
			v.Decl = m.byDef[r]
			if v.Decl == nil || v.Decl.Kind != kindStruct {
				return fmt.Errorf("variant %q: %s is not an object", tag, r)
			}
		default:
			// An inline variant: its properties other than the tag become a struct.
			key := u.Def + "/" + tag
			gn, ok := inlineVariants[key]
			if !ok {
				return fmt.Errorf("inline variant %q needs a name in inlineVariants", key)
			}
			in := &node{Type: typeList{"object"}, Required: b.Required, Description: b.Description, Deprecated: b.Deprecated}
			for _, p := range b.Properties {
				if p.Name != u.Tag {
					in.Properties = append(in.Properties, p)
				}
			}
			v.Decl = &decl{Name: gn, Kind: kindStruct, node: in, Doc: in.Description, Deprecated: in.Deprecated}
			if err := m.add(v.Decl); err != nil {
				return err
			}
		}
		if !tagged {
			if hasDefault {
				return fmt.Errorf("two variants without %q", u.Tag)
			}
			hasDefault = true
			v.Aliases = tagAliases[u.Def]
		}
		if v.Decl.node != nil && v.Decl.node.Properties.get(u.Tag) != nil {
			return fmt.Errorf("variant %s has its own %q property", v.Decl.Name, u.Tag)
		}
		v.Decl.Implements = append(v.Decl.Implements, u)
		u.Variants = append(u.Variants, v)
	}
	u.Unknown = &decl{Name: "Unknown" + u.Name, Kind: kindUnknown, Union: u}
	u.Unknown.Implements = []*union{u}
	return m.add(u.Unknown)
}

func (m *model) untaggedVariants(u *union, bs []*node) error {
	for _, b := range bs {
		v := &variant{Doc: b.Description}
		if r := b.ref(); r != "" {
			v.Decl = m.byDef[r]
			if v.Decl == nil || v.Decl.Kind != kindStruct {
				return fmt.Errorf("untagged variant %s is not an object", r)
			}
		} else {
			// A value variant: a scalar, or an array of strings or of a $def.
			base := strings.TrimSuffix(u.Name, "Value")
			var gn, under string
			switch t := b.Type.nonNull(); t {
			case "string", "boolean", "integer", "number":
				gn, under = base+goName(t), map[string]string{"string": "string", "boolean": "bool", "integer": intType(b.Format), "number": "float64"}[t]
			case "array":
				if r := b.Items.ref(); r != "" {
					gn, under = goName(r)+"List", "[]"+goName(r)
				} else if b.Items.Type.nonNull() == "string" {
					gn, under = base+"StringArray", "[]string"
				}
			}
			if gn == "" || u.Flat {
				return fmt.Errorf("unsupported untagged branch in %s", u.Name)
			}
			v.Decl = &decl{Name: gn, Kind: kindValue, Under: under, node: b, Doc: b.Description, Deprecated: b.Deprecated}
			if err := m.add(v.Decl); err != nil {
				return err
			}
		}
		v.Decl.Implements = append(v.Decl.Implements, u)
		u.Variants = append(u.Variants, v)
	}
	return nil
}

// buildFields turns the properties of an object into struct fields.
func (m *model) buildFields(d *decl) error {
	for _, p := range d.node.Properties {
		f, err := m.buildField(p.Name, p.Node, d.node.isRequired(p.Name))
		if err != nil {
			return fmt.Errorf("property %s: %w", p.Name, err)
		}
		d.Fields = append(d.Fields, f)
	}
	return nil
}

func (m *model) buildField(name string, p *node, required bool) (*field, error) {
	f := &field{
		GoName: goName(name), JSON: name, Required: required, Doc: p.Description, Deprecated: p.Deprecated,
		Lenient: p.DefaultOnError, SkipInvalid: p.SkipInvalid, NullDefault: p.DefaultOnNull,
	}
	t, nullable, err := m.propType(name, p)
	if err != nil {
		return nil, err
	}
	f.Type = t
	if required && nullable && !(t.Kind == "named" && t.Decl.Kind == kindSupport) {
		return nil, fmt.Errorf("required and nullable")
	}
	switch {
	case t.Kind == "meta" || t.Kind == "raw":
		f.Omit = "omitempty"
	case t.Kind == "slice" || t.Kind == "map":
		// Where null means "not given", an empty collection is a value of its own and is kept.
		switch {
		case required:
		case nullable:
			f.Omit = "omitzero"
		default:
			f.Omit = "omitempty"
		}
	case required:
	case t.union() != nil:
		f.Omit = "omitempty"
	case t.Kind == "named" && t.Decl.Kind == kindStruct:
		f.Type = &goType{Kind: "ptr", Elem: t}
		f.Omit = "omitempty"
	case t.Kind == "named" && t.Decl.Kind == kindEnum && !nullable:
		f.Omit = "omitempty" // "" is no value of the enum, so it can stand for absent
	case t.Kind == "builtin" && t.Name == "bool" && string(p.Default) == "false":
		f.Omit = "omitempty" // absent means false
	default:
		// An optional scalar whose zero value is a value of its own: nil is absent.
		f.Type = &goType{Kind: "ptr", Elem: t}
		f.Omit = "omitempty"
	}
	return f, nil
}

// propType is the Go type of a property or array item, and whether the schema allows null.
func (m *model) propType(name string, p *node) (*goType, bool, error) {
	if r := p.ref(); r != "" {
		t, err := m.named(r)
		return t, false, err
	}
	if len(p.AnyOf) == 2 && p.Type == nil {
		for i, b := range p.AnyOf {
			if b.Type.has("null") && len(b.Type) == 1 {
				if r := p.AnyOf[1-i].ref(); r != "" {
					t, err := m.named(r)
					return t, true, err
				}
			}
		}
	}
	nullable := p.Type.has("null")
	switch p.Type.nonNull() {
	case "string":
		return &goType{Kind: "builtin", Name: "string"}, nullable, nil
	case "boolean":
		return &goType{Kind: "builtin", Name: "bool"}, nullable, nil
	case "integer":
		return &goType{Kind: "builtin", Name: intType(p.Format)}, nullable, nil
	case "number":
		return &goType{Kind: "builtin", Name: "float64"}, nullable, nil
	case "array":
		if p.Items == nil {
			return nil, false, fmt.Errorf("array without items")
		}
		e, _, err := m.propType(name, p.Items)
		return &goType{Kind: "slice", Elem: e}, nullable, err
	case "object":
		if name == "_meta" {
			return &goType{Kind: "meta"}, nullable, nil
		}
		var ap node
		if p.AdditionalProperties == nil || json.Unmarshal(p.AdditionalProperties, &ap) != nil {
			return nil, false, fmt.Errorf("object property without a value schema")
		}
		e, _, err := m.propType(name, &ap)
		return &goType{Kind: "map", Elem: e}, nullable, err
	case "":
		if isEmpty(p) {
			return &goType{Kind: "raw"}, false, nil
		}
	}
	return nil, false, fmt.Errorf("unsupported property schema")
}

func (m *model) named(def string) (*goType, error) {
	d := m.byDef[def]
	if d == nil {
		return nil, fmt.Errorf("reference to unknown or skipped $def %s", def)
	}
	return &goType{Kind: "named", Name: d.Name, Decl: d}, nil
}

func (m *model) buildMethods(s *schema) error {
	byName := map[string]*method{}
	for _, name := range s.defNames() {
		n := s.Defs[name]
		if n.Method == "" {
			continue
		}
		d := m.byDef[name]
		mt := byName[n.Method]
		if mt == nil {
			mt = &method{Name: n.Method, Side: n.Side}
			byName[n.Method] = mt
			m.methods = append(m.methods, mt)
		}
		switch {
		case strings.HasSuffix(name, "Request"):
			mt.Request = d
		case strings.HasSuffix(name, "Response"):
			mt.Response = d
		case strings.HasSuffix(name, "Notification"):
			mt.Request, mt.Notification = d, true
		default:
			return fmt.Errorf("%s: cannot tell whether it is a request, response or notification", name)
		}
	}
	for _, mt := range m.methods {
		if mt.Request == nil || mt.Notification == (mt.Response != nil) {
			return fmt.Errorf("method %s: incomplete request/response pair", mt.Name)
		}
		mt.Request.Method, mt.Request.MethodRole = mt, "request"
		if mt.Notification {
			mt.Request.MethodRole = "notification"
		} else {
			mt.Response.Method, mt.Response.MethodRole = mt, "response"
		}
	}
	sort.Slice(m.methods, func(i, j int) bool { return m.methods[i].Name < m.methods[j].Name })
	docs := methodDocs(s)
	for _, mt := range m.methods {
		mt.Doc = docs[mt.Request.Def]
	}
	return nil
}

// methodDocs finds what the schema says about each method. It says it where it lists the
// messages (the message-union $defs and the schema's top-level anyOf), on the branch that refers
// to the method's params: "Creates a new conversation session with the agent. ...". The keys are
// the $defs of the params.
func methodDocs(s *schema) map[string]string {
	docs := map[string]string{}
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if r := n.ref(); r != "" && n.Description != "" && s.Defs[r] != nil && s.Defs[r].Method != "" {
			if _, ok := docs[r]; !ok {
				docs[r] = n.Description
			}
		}
		for _, p := range n.Properties {
			walk(p.Node)
		}
		for _, b := range slices.Concat(n.AnyOf, n.OneOf, n.AllOf) {
			walk(b)
		}
	}
	for _, def := range s.defNames() {
		if _, skip := skipReasons[def]; skip {
			walk(s.Defs[def])
		}
	}
	for _, n := range s.AnyOf {
		walk(n)
	}
	return docs
}
