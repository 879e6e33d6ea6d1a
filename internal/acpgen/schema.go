package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// schema is the subset of JSON Schema (draft 2020-12) the ACP schema uses.
type schema struct {
	Defs  map[string]*node `json:"$defs"`
	AnyOf []*node          `json:"anyOf"` // the messages; their params carry the method descriptions
}

// node is one schema object. Only the keywords the generator looks at are kept.
type node struct {
	Ref                  string          `json:"$ref"`
	Description          string          `json:"description"`
	Deprecated           bool            `json:"deprecated"`
	Type                 typeList        `json:"type"`
	Format               string          `json:"format"`
	Const                json.RawMessage `json:"const"`
	Default              json.RawMessage `json:"default"`
	Properties           props           `json:"properties"`
	Required             []string        `json:"required"`
	Items                *node           `json:"items"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	AllOf                []*node         `json:"allOf"`
	AnyOf                []*node         `json:"anyOf"`
	OneOf                []*node         `json:"oneOf"`
	Not                  *node           `json:"not"`
	Discriminator        *struct {
		PropertyName string `json:"propertyName"`
	} `json:"discriminator"`

	Side           string `json:"x-side"`
	Method         string `json:"x-method"`
	DocsIgnore     bool   `json:"x-docs-ignore"`
	DefaultOnError bool   `json:"x-deserialize-default-on-error"`
	SkipInvalid    bool   `json:"x-deserialize-skip-invalid-items"`
	DefaultOnNull  bool   `json:"x-deserialize-default-on-null"`
}

// typeList is the "type" keyword: one name or a list of names.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	*t = many
	return nil
}

func (t typeList) has(name string) bool {
	for _, s := range t {
		if s == name {
			return true
		}
	}
	return false
}

// nonNull is the single non-null type name, or "" if there is none or several.
func (t typeList) nonNull() string {
	var out string
	for _, s := range t {
		if s == "null" {
			continue
		}
		if out != "" {
			return ""
		}
		out = s
	}
	return out
}

// prop is a named property; props keep the schema's order, which becomes the Go field order.
type prop struct {
	Name string
	Node *node
}

type props []prop

func (p *props) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("properties: want an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		n := new(node)
		if err := dec.Decode(n); err != nil {
			return fmt.Errorf("property %v: %w", t, err)
		}
		*p = append(*p, prop{Name: t.(string), Node: n})
	}
	return nil
}

func (p props) get(name string) *node {
	for _, x := range p {
		if x.Name == name {
			return x.Node
		}
	}
	return nil
}

func loadSchema(data []byte) (*schema, error) {
	var s schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parsing schema: %w", err)
	}
	if len(s.Defs) == 0 {
		return nil, fmt.Errorf("schema has no $defs")
	}
	return &s, nil
}

// defNames returns the $def names in sorted order.
func (s *schema) defNames() []string {
	names := make([]string, 0, len(s.Defs))
	for n := range s.Defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// refName is the $def name a "$ref" points at.
func refName(ref string) string {
	const prefix = "#/$defs/"
	if len(ref) > len(prefix) && ref[:len(prefix)] == prefix {
		return ref[len(prefix):]
	}
	return ""
}

// ref returns the single $def n refers to, directly or through a one-element allOf.
func (n *node) ref() string {
	if n.Ref != "" {
		return refName(n.Ref)
	}
	if len(n.AllOf) == 1 && n.AllOf[0].Ref != "" {
		return refName(n.AllOf[0].Ref)
	}
	return ""
}

// constString is the string value of a "const", if it is one.
func (n *node) constString() (string, bool) {
	if n == nil || n.Const == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(n.Const, &s) != nil {
		return "", false
	}
	return s, true
}

func (n *node) isRequired(name string) bool {
	for _, r := range n.Required {
		if r == name {
			return true
		}
	}
	return false
}
