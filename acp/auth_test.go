package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// The authMethods of real agents, recorded from their initialize answers
// (npm, @zed-industries/codex-acp 0.16.0 and @qwen-code/qwen-code 0.24.4,
// with clientCapabilities.auth.terminal and _meta["terminal-auth"] offered),
// plus the legacy Zed form and entries a lenient reader must survive.
const recordedAuthMethods = `{"protocolVersion":1,"authMethods":[
 {"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)"},
 {"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","description":"Requires setting the ` + "`CODEX_API_KEY`" + ` environment variable.","vars":[{"name":"CODEX_API_KEY"}]},
 {"id":"openai","name":"Use OpenAI API key","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable","_meta":{"type":"terminal","args":["--auth-type=openai"]}},
 {"id":"claude-login","name":"Log in with Claude Code","_meta":{"terminal-auth":{"command":"node","args":["/opt/cli.js","/login"],"label":"claude /login","env":{"A":"1","B=C":"x"}}}},
 {"type":"terminal","id":"tui","name":"Log in","args":["login"],"env":{"MODE":"tui"}},
 {"type":"env_var","id":"two","vars":[{"name":"K1","label":"Key"},{"name":"K2","optional":true},{"name":""},"junk"]},
 {"type":"oauth2","id":"future","name":"Later"},
 {"name":"no id"},
 42
]}`

func TestParseAuthOptions(t *testing.T) {
	got := ParseAuthOptions(json.RawMessage(recordedAuthMethods))
	want := []AuthOption{
		{ID: "chatgpt", Name: "Login with ChatGPT", Description: "Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)", Kind: AuthKindAgent},
		{ID: "codex-api-key", Name: "Use CODEX_API_KEY", Description: "Requires setting the `CODEX_API_KEY` environment variable.", Kind: AuthKindEnvVar,
			Vars: []AuthVar{{Name: "CODEX_API_KEY"}}},
		{ID: "openai", Name: "Use OpenAI API key", Description: "Requires setting the `OPENAI_API_KEY` environment variable", Kind: AuthKindTerminal,
			Args: []string{"--auth-type=openai"}},
		{ID: "claude-login", Name: "Log in with Claude Code", Description: "claude /login", Kind: AuthKindTerminal,
			Command: "node", Args: []string{"/opt/cli.js", "/login"}, Env: map[string]string{"A": "1"}},
		{ID: "tui", Name: "Log in", Kind: AuthKindTerminal, Args: []string{"login"}, Env: map[string]string{"MODE": "tui"}},
		{ID: "two", Name: "two", Kind: AuthKindEnvVar, Vars: []AuthVar{{Name: "K1", Label: "Key"}, {Name: "K2", Optional: true}}},
		{ID: "future", Name: "Later", Kind: "oauth2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseAuthOptions (-want +got):\n-%s\n+%s", dump(want), dump(got))
	}
	for _, bad := range []string{``, `null`, `[]`, `{"authMethods":{}}`, `{"authMethods":null}`} {
		if got := ParseAuthOptions(json.RawMessage(bad)); got != nil {
			t.Errorf("ParseAuthOptions(%q) = %v, want nil", bad, got)
		}
	}
}

func dump(opts []AuthOption) string {
	s := ""
	for _, o := range opts {
		s += fmt.Sprintf("\n  %+v", o)
	}
	return s
}

// authAgent advertises the recorded methods verbatim, as UnknownAuthMethod
// values, so that the wire carries exactly what real agents send.
type authAgent struct{ fullAgent }

func (a *authAgent) Initialize(_ context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	var top struct{ AuthMethods []json.RawMessage }
	if err := json.Unmarshal([]byte(recordedAuthMethods), &top); err != nil {
		return nil, err
	}
	resp := &InitializeResponse{ProtocolVersion: ProtocolVersion1}
	for _, raw := range top.AuthMethods[:2] {
		resp.AuthMethods = append(resp.AuthMethods, &UnknownAuthMethod{Kind: "raw", Raw: raw})
	}
	return resp, nil
}

func TestInitializeAuth(t *testing.T) {
	cc, _ := pair(t, &authAgent{}, &fullClient{})
	init, opts, err := cc.InitializeAuth(context.Background(), &InitializeRequest{
		ClientCapabilities: &ClientCapabilities{Auth: &AuthCapabilities{Terminal: true}},
	})
	mustOK(t, "initialize", err)
	if init.ProtocolVersion != ProtocolVersion1 || len(init.AuthMethods) != 2 {
		t.Fatalf("typed result %+v", init)
	}
	// The typed result keeps an env_var method as an agent one, without
	// its variables; the options have them.
	if len(opts) != 2 || opts[1].Kind != AuthKindEnvVar || len(opts[1].Vars) != 1 || opts[1].Vars[0].Name != "CODEX_API_KEY" {
		t.Fatalf("options %s", dump(opts))
	}
}
