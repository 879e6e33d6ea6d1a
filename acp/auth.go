package acp

import (
	"context"
	"encoding/json"
	"strings"
)

// AuthKind is how a client uses an advertised authentication method.
type AuthKind string

const (
	// AuthKindAgent: the client calls authenticate with the method's ID and
	// the agent does the rest (a browser login, a stored key).
	AuthKindAgent AuthKind = "agent"
	// AuthKindEnvVar: the user sets the method's Vars in the agent's
	// environment, then the client calls authenticate. A legacy shape that
	// the v1 schema decodes as an agent method, without its variables.
	AuthKindEnvVar AuthKind = "env_var"
	// AuthKindTerminal: the client runs the agent (or, for the legacy
	// _meta["terminal-auth"] form, the given Command) interactively on the
	// user's terminal with Args and Env; exit status 0 means logged in. The
	// client must not call authenticate with it.
	AuthKindTerminal AuthKind = "terminal"
)

// MetaTerminalAuth is the _meta key of the pre-standard terminal login:
// a client sets clientCapabilities._meta["terminal-auth"] to true, and an
// agent may then describe a login command under this key of a method.
const MetaTerminalAuth = "terminal-auth"

// AuthOption is one authentication method an agent advertised, with what
// a client needs to use it. Agents send shapes that the v1 schema (and so
// the generated AuthMethod) does not describe, so these are read from the
// raw initialize result:
//
//   - {"type":"env_var","id","name","description","vars":[{"name","label","optional","secret"}],"link"}
//     (codex-acp 0.16: codex-api-key and openai-api-key);
//   - an agent method with _meta["terminal-auth"] = {"command","args","label","env"}
//     (Zed's terminal login before it was standardised);
//   - an agent method with _meta = {"type":"terminal","args":[…],"env":{…}}
//     (qwen-code 0.24).
type AuthOption struct {
	ID          AuthMethodID
	Name        string // the ID when the agent sent none
	Description string
	// Kind is AuthKindAgent, AuthKindEnvVar, AuthKindTerminal, or a type
	// this package does not know, which a client can only show.
	Kind AuthKind
	// Vars, for env_var, are the variables to set.
	Vars []AuthVar
	// Link, for env_var, is where to get the credentials, if the agent said.
	Link string
	// Args and Env, for terminal, are appended to the agent's command line
	// and set on top of its environment (names that are not valid
	// environment names are dropped).
	Args []string
	Env  map[string]string
	// Command, for the legacy _meta["terminal-auth"] form only, is the
	// program to run instead of the agent; Args are then its arguments.
	Command string
}

// AuthVar is one environment variable of an env_var method.
type AuthVar struct {
	Name     string
	Label    string
	Optional bool
}

// InitializeAuth sends initialize like Initialize and also returns every
// advertised authentication method in full (see AuthOption), which the
// typed response's AuthMethods cannot carry. It negotiates the version as
// Initialize does; a v2 agent's methods are read in v1's words.
func (c *ClientConn) InitializeAuth(ctx context.Context, req *InitializeRequest) (*InitializeResponse, []AuthOption, error) {
	resp, raw, err := c.negotiate(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return resp, ParseAuthOptions(raw), nil
}

// rawInitialize keeps the raw initialize result beside the typed one.
type rawInitialize struct {
	resp InitializeResponse
	raw  json.RawMessage
}

func (r *rawInitialize) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return json.Unmarshal(b, &r.resp)
}

// ParseAuthOptions reads the authMethods of a raw initialize result (or of
// any object with an authMethods array, such as the data of a -32000 error
// from qwen-code). It is lenient, as the schema asks of optional fields:
// an entry that is not an object or has no id is skipped, a field of the
// wrong type is absent.
func ParseAuthOptions(result json.RawMessage) []AuthOption {
	var top struct {
		AuthMethods []json.RawMessage `json:"authMethods"`
	}
	if json.Unmarshal(result, &top) != nil {
		return nil
	}
	var opts []AuthOption
	for _, raw := range top.AuthMethods {
		if o, ok := parseAuthOption(raw); ok {
			opts = append(opts, o)
		}
	}
	return opts
}

func parseAuthOption(raw json.RawMessage) (AuthOption, bool) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return AuthOption{}, false
	}
	o := AuthOption{ID: AuthMethodID(authStr(f["id"])), Name: authStr(f["name"]), Description: authStr(f["description"])}
	if o.ID == "" {
		return AuthOption{}, false
	}
	if o.Name == "" {
		o.Name = string(o.ID)
	}
	switch typ := authStr(f["type"]); typ {
	case "", "agent":
		o.Kind = AuthKindAgent
		legacyTerminal(&o, f["_meta"])
	case "env_var":
		o.Kind = AuthKindEnvVar
		o.Link = authStr(f["link"])
		var vars []json.RawMessage
		_ = json.Unmarshal(f["vars"], &vars)
		for _, v := range vars {
			var vf map[string]json.RawMessage
			if json.Unmarshal(v, &vf) != nil {
				continue
			}
			av := AuthVar{Name: authStr(vf["name"]), Label: authStr(vf["label"])}
			_ = json.Unmarshal(vf["optional"], &av.Optional)
			if validEnvName(av.Name) {
				o.Vars = append(o.Vars, av)
			}
		}
		// An earlier draft of the auth-methods RFD named one variable.
		if name := authStr(f["varName"]); len(o.Vars) == 0 && validEnvName(name) {
			o.Vars = []AuthVar{{Name: name}}
		}
	case "terminal":
		o.Kind = AuthKindTerminal
		o.Args, o.Env = authStrs(f["args"]), authEnv(f["env"])
	default:
		o.Kind = AuthKind(typ)
	}
	return o, true
}

// legacyTerminal turns an agent method into a terminal one when its _meta
// describes a terminal login in one of the pre-standard forms.
func legacyTerminal(o *AuthOption, meta json.RawMessage) {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return
	}
	var ta map[string]json.RawMessage
	if json.Unmarshal(m[MetaTerminalAuth], &ta) == nil && authStr(ta["command"]) != "" {
		o.Kind = AuthKindTerminal
		o.Command, o.Args, o.Env = authStr(ta["command"]), authStrs(ta["args"]), authEnv(ta["env"])
		if o.Description == "" {
			o.Description = authStr(ta["label"])
		}
		return
	}
	if authStr(m["type"]) == "terminal" {
		o.Kind = AuthKindTerminal
		o.Args, o.Env = authStrs(m["args"]), authEnv(m["env"])
	}
}

// authStr is a JSON string's value, "" for anything else.
func authStr(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// authStrs is a JSON array of strings, nil if anything in it is not one.
func authStrs(raw json.RawMessage) []string {
	var s []string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return s
}

// authEnv is a JSON object of strings, without the names no environment can
// hold.
func authEnv(raw json.RawMessage) map[string]string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		var s string
		if validEnvName(k) && json.Unmarshal(v, &s) == nil && !strings.ContainsRune(s, 0) {
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}
