package main

import (
	"errors"
	"fmt"
	"sort"
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
		if err := setKind(d, n); err != nil {
			return nil, err
		}
		if err := m.add(d); err != nil {
			return nil, err
		}
	}
	// Pass 2: unions (they add variant types), then struct fields, then methods.
	for _, name := range s.defNames() {
		if err := m.buildUnions(m.byDef[name]); err != nil {
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

// setKind says which kind of Go type $def d.Def, the schema node n, becomes.
func setKind(d *decl, n *node) error {
	switch {
	case d.Def == "RequestId":
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
		return fmt.Errorf("%s: unsupported schema shape", d.Def)
	}
	return nil
}

// buildUnions builds the union d declares (nil or a skipped $def: none): a union $def's own, or
// the inline union of an object with oneOf/anyOf, which flatUnions names and which several
// objects may share.
func (m *model) buildUnions(d *decl) error {
	if d == nil {
		return nil
	}
	var err error
	switch d.Kind {
	case kindUnion:
		d.Union, err = m.buildUnion(d.Name, d.Def, branches(d.node), false)
	case kindStruct:
		if len(branches(d.node)) == 0 {
			return nil
		}
		fu, ok := flatUnions[d.Def]
		if !ok {
			return errors.New("object with oneOf/anyOf needs an entry in flatUnions")
		}
		if u := m.unions[fu.Iface]; u != nil {
			d.Flat = u // the same inline union appears in several objects
		} else if d.Flat, err = m.buildUnion(fu.Iface, d.Def, branches(d.node), true); err == nil {
			m.addUnionDecl(d.Flat, "")
		}
	}
	return err
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
