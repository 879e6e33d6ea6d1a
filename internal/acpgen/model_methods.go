package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

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
