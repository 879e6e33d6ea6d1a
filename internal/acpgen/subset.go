package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A subset file holds the Go types of a few $defs of another schema (the v2 draft) and of every
// $def they refer to, beside types_gen.go in package acp. Its names carry a prefix so that they do
// not collide with the v1 names ("TerminalExitStatus" of v2 becomes V2TerminalExitStatus), and it
// declares no methods and no support code: the (un)marshalers it emits call the helpers that
// types_gen.go already has.
//
//	go run ../internal/acpgen -schema ../schema/v2/schema.json -types TerminalUpdate,TerminalOutputChunk -prefix V2 -out types_v2_gen.go
//
// A string property with "contentEncoding": "base64" becomes a []byte, which encoding/json writes
// and reads as standard base64; a required one is written as "" when nil, never as null.

// subsetOptions says which $defs a subset file holds and how they are named.
type subsetOptions struct {
	Roots  []string // the $defs asked for; those they refer to come along; "all" for every $def
	Prefix string   // put before every Go name
	Schema string   // the schema's path as the header names it, e.g. "schema/v2/schema.json"

	// Shared is the schema types_gen.go comes from (v1). A $def of this schema whose wire shape
	// is the same there (see sameShape) keeps its v1 Go type: it is not declared again and gets
	// no prefix, so one fact has one Go name across versions.
	Shared []byte
}

// generateSubset turns the closure of opts.Roots in the schema into gofmt'ed Go source.
func generateSubset(schemaJSON []byte, opts subsetOptions) ([]byte, error) {
	s, err := loadSchema(schemaJSON)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		return nil, fmt.Errorf("a subset needs a prefix, or its names would collide with types_gen.go")
	}
	shared, v1Methods := map[string]bool{}, map[string]bool(nil)
	if opts.Shared != nil {
		if shared, v1Methods, err = sharedWithV1(s, schemaJSON, opts.Shared); err != nil {
			return nil, err
		}
	}
	all := len(opts.Roots) == 1 && opts.Roots[0] == "all"
	if all {
		opts.Roots = everyDef(s)
	}
	defs, err := closure(s, opts.Roots)
	if err != nil {
		return nil, err
	}
	sub := &schema{Defs: map[string]*node{}}
	for _, d := range defs {
		sub.Defs[d] = s.Defs[d]
	}
	m, err := buildModel(sub)
	if err != nil {
		return nil, err
	}
	if len(m.methods) > 0 && v1Methods == nil {
		return nil, fmt.Errorf("a subset cannot hold methods (%s): their table lives in types_gen.go", m.methods[0].Name)
	}
	base64Fields, err := base64Props(schemaJSON, defs)
	if err != nil {
		return nil, err
	}
	keep := sharedDecls(m, shared)
	prefixNames(m, opts.Prefix, keep)
	marshalBytes, err := useBytes(m, base64Fields)
	if err != nil {
		return nil, err
	}

	body := &emitter{m: m}
	if v1Methods != nil {
		docs := methodDocs(s) // the whole schema: it says them where it lists the messages
		for _, mt := range m.methods {
			mt.Doc = docs[mt.Request.Def]
		}
		subsetMethods(body, m, v1Methods, strings.ToLower(opts.Prefix)+"MethodTable")
	}
	subsetDecls(body, m, keep, marshalBytes)

	e := &emitter{m: m}
	subsetHeader(e, body.String(), schemaJSON, opts, all, len(defs), keep)
	e.Write(body.Bytes())
	out, err := format.Source(e.Bytes())
	if err != nil {
		return e.Bytes(), fmt.Errorf("formatting generated code: %w", err)
	}
	return out, nil
}

// sharedWithV1 reads the v1 schema v1JSON beside the schema s: the $defs of s that keep their v1
// Go type (sameShape, and those patchV2 adds to s), and the v1 methods.
func sharedWithV1(s *schema, schemaJSON, v1JSON []byte) (shared, v1Methods map[string]bool, err error) {
	v1, err := loadSchema(v1JSON)
	if err != nil {
		return nil, nil, fmt.Errorf("shared schema: %w", err)
	}
	if shared, err = sameShape(schemaJSON, v1JSON); err != nil {
		return nil, nil, err
	}
	added, err := patchV2(s, v1)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range added {
		shared[d] = true
	}
	v1Methods = map[string]bool{}
	for _, n := range v1.Defs {
		if n.Method != "" {
			v1Methods[n.Method] = true
		}
	}
	return shared, v1Methods, nil
}

// everyDef is the roots "all" stands for: every $def but those skipReasons leaves out.
func everyDef(s *schema) []string {
	var roots []string
	for _, d := range s.defNames() {
		if _, skip := skipReasons[d]; !skip {
			roots = append(roots, d)
		}
	}
	return roots
}

// useBytes makes each base64 string property a []byte, and returns the structs with a required
// one, whose nil must go on the wire as "".
func useBytes(m *model, base64Fields map[string]bool) ([]*decl, error) {
	var marshalBytes []*decl
	for _, d := range m.sorted() {
		for _, f := range d.Fields {
			if !base64Fields[d.Def+"."+f.JSON] {
				continue
			}
			if f.Type.Kind != "builtin" || f.Type.Name != "string" {
				return nil, fmt.Errorf("%s.%s: contentEncoding on a property that is not a plain string", d.Def, f.JSON)
			}
			f.Type = &goType{Kind: "builtin", Name: "[]byte"}
			f.Doc += "\n\nBase64 on the wire; encoding/json encodes and decodes the bytes."
			if f.Required {
				marshalBytes = append(marshalBytes, d)
			}
		}
	}
	return marshalBytes, nil
}

// subsetDecls emits the declarations of the subset: each type not kept from types_gen.go, and for
// a kept one only its place in this schema's unions.
func subsetDecls(body *emitter, m *model, keep map[*decl]bool, marshalBytes []*decl) {
	for _, d := range m.sorted() {
		if keep[d] {
			// Declared in types_gen.go; only its place in this schema's unions is new.
			for _, u := range d.Implements {
				if !keep[m.decls[u.Name]] {
					body.p("func (*%s) is%s() {}\n", d.Name, u.Name)
				}
			}
			continue
		}
		body.decl(d)
		if containsDecl(marshalBytes, d) {
			subsetMarshalBytes(body, d)
		}
	}
}

// subsetHeader writes the file's header, package clause, the imports body uses and the comment
// saying where the types come from and which keep their types_gen.go names.
func subsetHeader(e *emitter, body string, schemaJSON []byte, opts subsetOptions, all bool, ndefs int, keep map[*decl]bool) {
	fmt.Fprintf(e, "// Code generated by internal/acpgen from %s; DO NOT EDIT.\n\n", opts.Schema)
	e.p("package acp\n")
	var imports []string
	for _, pkg := range []string{"encoding/json", "errors", "fmt"} {
		if strings.Contains(body, pkg[strings.LastIndexByte(pkg, '/')+1:]+".") {
			imports = append(imports, strconv.Quote(pkg))
		}
	}
	if len(imports) > 0 {
		e.p("import (\n%s\n)\n", strings.Join(imports, "\n"))
	}
	e.p("// Generated from the schema with sha256 %x (see %s/SOURCE):", sha256.Sum256(schemaJSON), dir(opts.Schema))
	switch {
	case all:
		var doc docText
		doc.para("every $def (%d) but those hand-written or left out in types_gen.go (%s), named with the prefix %s.",
			ndefs, strings.Join(sortedKeys(skipReasons), ", "), opts.Prefix)
		e.doc(&doc, "")
	default:
		e.p("// the $defs %s and those they refer to (%d in all), named with the prefix %s.",
			strings.Join(opts.Roots, ", "), ndefs, opts.Prefix)
	}
	if len(keep) > 0 {
		var names []string
		for d := range keep {
			if d.Def != "" {
				names = append(names, d.Name)
			}
		}
		sort.Strings(names)
		var doc docText
		doc.para("These %d have the same wire shape as in types_gen.go's schema and keep its Go types, so they are not declared here: %s.", len(names), strings.Join(names, ", "))
		e.p("//")
		e.doc(&doc, "")
	}
	e.p("")
}

func dir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return "."
}

func containsDecl(ds []*decl, d *decl) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// subsetMarshalBytes writes a MarshalJSON for a struct whose required []byte fields must not go
// as null when nil.
func subsetMarshalBytes(e *emitter, d *decl) {
	e.p("// MarshalJSON sends a nil required byte field as \"\", since the schema requires a string.")
	e.p("func (x %s) MarshalJSON() ([]byte, error) {", d.Name)
	e.p("type plain %s // drops the methods, so json.Marshal does not come back here", d.Name)
	for _, f := range d.Fields {
		if f.Required && f.Type.Kind == "builtin" && f.Type.Name == "[]byte" {
			e.p("if x.%s == nil {\nx.%s = []byte{}\n}", f.GoName, f.GoName)
		}
	}
	e.p("return json.Marshal(plain(x))")
	e.p("}\n")
}

// closure is roots and every $def they refer to, sorted.
func closure(s *schema, roots []string) ([]string, error) {
	seen := map[string]bool{}
	var visit func(def string) error
	var walk func(n *node) error
	visit = func(def string) error {
		if seen[def] {
			return nil
		}
		n := s.Defs[def]
		if n == nil {
			return fmt.Errorf("no $def %q in the schema", def)
		}
		seen[def] = true
		return walk(n)
	}
	walk = func(n *node) error {
		if n == nil {
			return nil
		}
		if r := refName(n.Ref); r != "" {
			if err := visit(r); err != nil {
				return err
			}
		}
		for _, p := range n.Properties {
			if err := walk(p.Node); err != nil {
				return err
			}
		}
		var ap node
		if len(n.AdditionalProperties) > 0 && json.Unmarshal(n.AdditionalProperties, &ap) == nil {
			if err := walk(&ap); err != nil {
				return err
			}
		}
		for _, group := range [][]*node{n.AllOf, n.AnyOf, n.OneOf, {n.Items, n.Not}} {
			for _, b := range group {
				if err := walk(b); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("a subset needs at least one $def")
	}
	for _, r := range roots {
		if err := visit(r); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, nil
}

// base64Props finds the properties of defs declared "contentEncoding": "base64", as "Def.prop".
// The generator's node type does not keep the keyword, so it is read here from the raw schema.
func base64Props(schemaJSON []byte, defs []string) (map[string]bool, error) {
	var raw struct {
		Defs map[string]struct {
			Properties map[string]struct {
				ContentEncoding string `json:"contentEncoding"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schemaJSON, &raw); err != nil {
		return nil, fmt.Errorf("parsing schema: %w", err)
	}
	out := map[string]bool{}
	for _, d := range defs {
		for name, p := range raw.Defs[d].Properties {
			switch p.ContentEncoding {
			case "":
			case "base64":
				out[d+"."+name] = true
			default:
				return nil, fmt.Errorf("%s.%s: unsupported contentEncoding %q", d, name, p.ContentEncoding)
			}
		}
	}
	return out, nil
}

// prefixNames renames every declaration of m but those in keep, and the references to it, with
// prefix.
func prefixNames(m *model, prefix string, keep map[*decl]bool) {
	decls := map[string]*decl{}
	for _, d := range m.decls {
		if !keep[d] && d.Kind != kindSupport {
			d.Name = prefix + d.Name
		}
		decls[d.Name] = d
	}
	m.decls = decls
	unions := map[string]*union{}
	for _, u := range m.unions {
		if d := m.byDef[u.Def]; d == nil || !keep[d] {
			u.Name = prefix + u.Name
		}
		unions[u.Name] = u
	}
	m.unions = unions
	var fix func(t *goType)
	fix = func(t *goType) {
		for ; t != nil; t = t.Elem {
			if t.Kind == "named" {
				t.Name = t.Decl.Name
			}
		}
	}
	for _, d := range m.decls {
		for _, f := range d.Fields {
			fix(f.Type)
		}
	}
}

// runSubset writes the subset file. The header names the schema by its path from the module
// root, whatever directory go generate runs in.
func runSubset(schemaPath, sharedPath, out string, opts subsetOptions) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	opts.Schema = moduleRelative(schemaPath)
	if sharedPath != "" {
		if opts.Shared, err = os.ReadFile(sharedPath); err != nil {
			return err
		}
	}
	src, err := generateSubset(data, opts)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// moduleRelative is path without the leading "../" steps that lead out of the package directory.
func moduleRelative(path string) string {
	path = filepath.ToSlash(filepath.Clean(path))
	for strings.HasPrefix(path, "../") {
		path = path[len("../"):]
	}
	return path
}
