package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
			case "":
				if isEmpty(b) { // any other JSON value, kept as it came
					gn, under = base+"Other", "json.RawMessage"
				}
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
