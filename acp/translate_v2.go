package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// The SDK speaks v2 on behalf of Go code written against the v1 types (an
// Agent, a Client's v1 handlers), and v1 words for v2 facts where a Go
// user asks for them (ClientConn.Prompt's PromptResponse). Where the two
// versions encode a fact alike, the translation goes through JSON: the v1
// value is encoded and decoded as its v2 counterpart, or the reverse, so
// that each generated type's own rules (lenient members, unknown variants)
// decide what survives. What has no counterpart is dropped, never guessed.

// convert encodes src and decodes the JSON into dst.
func convert(dst, src any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// retag returns the JSON object raw with member key set to tag: added when
// absent, replaced when rename is true.
func retag(raw json.RawMessage, key, tag string, rename bool) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: %.40s", raw)
	}
	if _, ok := m[key]; ok && !rename {
		return raw, nil
	}
	t, _ := json.Marshal(tag)
	m[key] = t
	return json.Marshal(m)
}

// tagged re-encodes each value of a v1 union slice with key added where the
// v1 encoding leaves it out (v1's default variants: an McpServer without
// "type" is stdio, an AuthMethod without "type" is an agent method), and
// decodes the result into dst, a v2 slice.
func tagged[T any](src []T, key, tag string, dst any) error {
	var out []json.RawMessage
	for _, v := range src {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if b, err = retag(b, key, tag, false); err != nil {
			return err
		}
		out = append(out, b)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// presence is an optional v2 capability object: {} when on.
func presence[T any](on bool) *T {
	if on {
		return new(T)
	}
	return nil
}

// v2AuthMethods says v1 auth methods in v2's words ("id" became
// "methodId", a terminal method's env a list). Unknown kinds are dropped.
func v2AuthMethods(ms []AuthMethod) []V2AuthMethod {
	var out []V2AuthMethod
	for _, m := range ms {
		switch m := m.(type) {
		case *AuthMethodAgent:
			out = append(out, &V2AuthMethodAgent{MethodID: m.ID, Name: m.Name, Description: m.Description, Meta: m.Meta})
		case *AuthMethodTerminal:
			t := &V2AuthMethodTerminal{MethodID: m.ID, Name: m.Name, Description: m.Description, Args: m.Args, Meta: m.Meta}
			for _, k := range slices.Sorted(maps.Keys(m.Env)) {
				t.Env = append(t.Env, EnvVariable{Name: k, Value: m.Env[k]})
			}
			out = append(out, t)
		}
	}
	return out
}

// v1AuthMethods is v2AuthMethods the other way.
func v1AuthMethods(ms []V2AuthMethod) []AuthMethod {
	var out []AuthMethod
	for _, m := range ms {
		switch m := m.(type) {
		case *V2AuthMethodAgent:
			out = append(out, &AuthMethodAgent{ID: m.MethodID, Name: m.Name, Description: m.Description, Meta: m.Meta})
		case *V2AuthMethodTerminal:
			t := &AuthMethodTerminal{ID: m.MethodID, Name: m.Name, Description: m.Description, Args: m.Args, Meta: m.Meta}
			for _, e := range m.Env {
				if t.Env == nil {
					t.Env = map[string]string{}
				}
				t.Env[e.Name] = e.Value
			}
			out = append(out, t)
		}
	}
	return out
}

// translatedCall sends req as its v2 counterpart (read from its JSON) and
// reads the answer back as Resp.
func translatedCall[V2Req, V2Resp, Resp any](ctx context.Context, c *conn, method string, req any) (*Resp, error) {
	r := new(V2Req)
	if err := convert(r, req); err != nil {
		return nil, fmt.Errorf("acp: %s in v2's words: %w", method, err)
	}
	resp, err := call[V2Resp](ctx, c, method, r)
	if err != nil {
		return nil, err
	}
	out := new(Resp)
	if err := convert(out, resp); err != nil {
		return nil, fmt.Errorf("acp: the answer to %s in v1's words: %w", method, err)
	}
	return out, nil
}
