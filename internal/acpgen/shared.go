package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// One vocabulary across protocol versions: a $def of the v2 schema keeps the Go type of the v1
// $def of the same name when the two describe the same JSON (descriptions aside) and so does
// every $def it refers to. SessionId, ToolCallId, Implementation or UsageUpdate read the same in
// both versions, and a Go user should not convert between two copies of them; a $def whose shape
// changed (PromptResponse, ToolCallUpdate with its new capabilities) is a different fact and gets
// the prefix.

// sameShape lists the $defs of v2JSON that are shaped as in v1JSON, closed under reference.
func sameShape(v2JSON, v1JSON []byte) (map[string]bool, error) {
	var v1, v2 struct {
		Defs map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(v1JSON, &v1); err != nil {
		return nil, fmt.Errorf("parsing shared schema: %w", err)
	}
	if err := json.Unmarshal(v2JSON, &v2); err != nil {
		return nil, fmt.Errorf("parsing schema: %w", err)
	}
	same := map[string]bool{}
	for name, n := range v2.Defs {
		if o, ok := v1.Defs[name]; ok && reflect.DeepEqual(shapeOf(n), shapeOf(o)) {
			same[name] = true
		}
	}
	// A $def is the same only if what it refers to is: drop until nothing changes.
	for changed := true; changed; {
		changed = false
		for name := range same {
			for r := range refsOf(v2.Defs[name], map[string]bool{}) {
				if !same[r] {
					delete(same, name)
					changed = true
					break
				}
			}
		}
	}
	return same, nil
}

// shapeOf is a schema node without the keywords that only document it.
func shapeOf(n any) any {
	switch n := n.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range n {
			switch k {
			case "description", "title", "examples", "x-docs-ignore":
				continue
			case "properties":
				// Keys here are property names, not keywords: keep them all.
				props := map[string]any{}
				if m, ok := v.(map[string]any); ok {
					for pk, pv := range m {
						props[pk] = shapeOf(pv)
					}
				}
				out[k] = props
				continue
			}
			out[k] = shapeOf(v)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = shapeOf(v)
		}
		return out
	}
	return n
}

func refsOf(n any, acc map[string]bool) map[string]bool {
	switch n := n.(type) {
	case map[string]any:
		for k, v := range n {
			if s, ok := v.(string); ok && k == "$ref" {
				acc[refName(s)] = true
			} else {
				refsOf(v, acc)
			}
		}
	case []any:
		for _, v := range n {
			refsOf(v, acc)
		}
	}
	return acc
}

// sharedDecls is the set of declarations of m that keep their v1 Go types: those of the same
// $defs, and the ones the generator made up for them (a union's Unknown variant, its interface
// when written inline, a variant spelled out inline).
func sharedDecls(m *model, same map[string]bool) map[*decl]bool {
	keep := map[*decl]bool{}
	unionKept := func(u *union) bool { return same[u.Def] }
	for _, d := range m.decls {
		switch {
		case d.Def != "":
			if same[d.Def] {
				keep[d] = true
			}
		case d.Kind == kindUnion:
			keep[d] = unionKept(d.Union)
		case len(d.Implements) > 0:
			all := true
			for _, u := range d.Implements {
				all = all && unionKept(u)
			}
			keep[d] = all
		}
		if !keep[d] {
			delete(keep, d)
		}
	}
	return keep
}

// subsetMethods declares the constants of the methods the shared schema does not have; the others
// are in types_gen.go already; and the table of all its methods, named table.
func subsetMethods(e *emitter, m *model, v1Methods map[string]bool, table string) {
	var fresh []*method
	for _, mt := range m.methods {
		if !v1Methods[mt.Name] {
			fresh = append(fresh, mt)
		}
	}
	if len(fresh) > 0 {
		e.methodConsts("// Method names this schema adds, with what the schema says of each method.", fresh)
	}
	e.p("// %s lists every method of this version of the protocol, sorted by name.", table)
	e.p("var %s = [...]MethodInfo{", table)
	for _, mt := range m.methods {
		if mt.Notification {
			e.p("{Name: %s, Side: %s, Notification: true,", methodConst(mt.Name), sideConsts[mt.Side])
		} else {
			e.p("{Name: %s, Side: %s,", methodConst(mt.Name), sideConsts[mt.Side])
		}
		e.p("Request: func() any { return new(%s) },", mt.Request.Name)
		if mt.Response != nil {
			e.p("Response: func() any { return new(%s) },", mt.Response.Name)
		}
		e.p("},")
	}
	e.p("}\n")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// patchV2 reshapes the few v2 $defs the generator cannot take as they are. IdleStateUpdate is an
// object whose own "stopReason" property is also the tag of an inline union (one branch, "error",
// adds an "error" member): it becomes one struct with a StopReason of v1's StopReason type (the
// same fact, plus the value "error") and the error as raw JSON, read by the hand-written
// V2IdleStateUpdate.StopError. StateUpdate, see below. It reports the $defs it adds from v1, which keep their v1 types.
func patchV2(s, v1 *schema) (added []string, err error) {
	idle := s.Defs["IdleStateUpdate"]
	if idle == nil || v1.Defs["StopReason"] == nil {
		return nil, nil
	}
	if s.Defs["StopReason"] != nil {
		return nil, fmt.Errorf("IdleStateUpdate: the schema has a StopReason of its own now; drop the patch")
	}
	s.Defs["StopReason"] = v1.Defs["StopReason"]
	idle.AnyOf = nil
	stop := idle.Properties.get("stopReason")
	if stop == nil {
		return nil, fmt.Errorf("IdleStateUpdate: no stopReason")
	}
	stop.Type = nil
	stop.AnyOf = []*node{{Ref: "#/$defs/StopReason"}, {Type: typeList{"null"}}}
	errNode := &node{
		Description:    s.Defs["ErrorStopReason"].Properties.get("error").Description,
		DefaultOnError: true,
	}
	idle.Properties = append(idle.Properties, prop{Name: "error", Node: errNode})
	delete(s.Defs, "ErrorStopReason")

	// StateUpdate, a union tagged by "state", is itself a variant of SessionUpdate. It becomes an
	// object holding that union flat (field State, interface State), so that the session update
	// is a *V2StateUpdate whose State is a *V2IdleStateUpdate, say.
	if st := s.Defs["StateUpdate"]; st != nil && st.Type == nil {
		st.Type = typeList{"object"}
	}
	return []string{"StopReason"}, nil
}
