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

// v2MCPServers says v1 MCP servers in v2's words: a stdio server (v1's
// has no "type") gets type "stdio"; the others keep theirs. Each is then
// decoded as a V2MCPServer (an interface: encoding/json cannot).
func v2MCPServers(src []MCPServer) ([]V2MCPServer, error) {
	var out []V2MCPServer
	for _, v := range src {
		b, err := genEncodeMCPServer(v)
		if err != nil {
			return nil, err
		}
		if b, err = retag(b, "type", "stdio", false); err != nil {
			return nil, err
		}
		s, err := genDecodeV2MCPServer(b)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
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

// A config option's ID is "id" in v1 and "configId" in v2; everything
// else about it is encoded alike.
const (
	v1ConfigIDKey = "id"
	v2ConfigIDKey = "configId"
)

// convertConfigOptions re-encodes a list of config options (src) into dst,
// the other version's list, renaming each option's from member to to.
func convertConfigOptions(dst, src any, from, to string) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	if b, err = renameConfigIDs(b, from, to); err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// renameConfigIDs renames the member from to to in each object of the
// JSON array raw (null stays null).
func renameConfigIDs(raw json.RawMessage, from, to string) (json.RawMessage, error) {
	var opts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &opts); err != nil || opts == nil {
		return raw, err
	}
	for _, o := range opts {
		if v, ok := o[from]; ok {
			delete(o, from)
			o[to] = v
		}
	}
	return json.Marshal(opts)
}

// renameConfigOptionsIn renames the config option IDs of the
// "configOptions" member of the JSON object raw, if it has one.
func renameConfigOptionsIn(raw json.RawMessage, from, to string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	opts, ok := m["configOptions"]
	if !ok {
		return raw, nil
	}
	opts, err := renameConfigIDs(opts, from, to)
	if err != nil {
		return nil, err
	}
	m["configOptions"] = opts
	return json.Marshal(m)
}

// v1MCPServers says v2 MCP servers in v1's words, for an Agent written
// against the v1 types: v1 reads a stdio server's "type" as v2 writes it.
// It is never nil.
func v1MCPServers(src []V2MCPServer) ([]MCPServer, error) {
	out := []MCPServer{}
	for _, v := range src {
		b, err := genEncodeV2MCPServer(v)
		if err != nil {
			return nil, err
		}
		s, err := genDecodeMCPServer(b)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
