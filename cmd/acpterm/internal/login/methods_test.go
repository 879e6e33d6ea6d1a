package login

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// codexMethods are codex-acp 0.16.0's methods as recorded from its
// initialize answer.
var codexMethods = acp.ParseAuthOptions(json.RawMessage(`{"authMethods":[
 {"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)"},
 {"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","description":"Requires setting the ` + "`CODEX_API_KEY`" + ` environment variable.","vars":[{"name":"CODEX_API_KEY"}]},
 {"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable.","vars":[{"name":"OPENAI_API_KEY"}]}]}`))

func envOf(kv ...string) lookupFunc {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

func TestAutoAuthMethod(t *testing.T) {
	twoVars := acp.AuthOption{ID: "pair", Kind: acp.AuthKindEnvVar, Vars: []acp.AuthVar{{Name: "USER_ID"}, {Name: "SECRET"}}}
	optional := acp.AuthOption{ID: "opt", Kind: acp.AuthKindEnvVar, Vars: []acp.AuthVar{{Name: "REGION", Optional: true}}}
	tests := []struct {
		name  string
		opts  []acp.AuthOption
		env   lookupFunc
		want  acp.AuthMethodID // "" for none
		count int
	}{
		{"nothing set", codexMethods, envOf(), "", 0},
		{"one set", codexMethods, envOf("OPENAI_API_KEY=sk"), "openai-api-key", 1},
		{"set but empty", codexMethods, envOf("OPENAI_API_KEY="), "", 0},
		{"both set: no guess", codexMethods, envOf("OPENAI_API_KEY=a", "CODEX_API_KEY=b"), "", 2},
		{"one set, one empty", codexMethods, envOf("OPENAI_API_KEY=", "CODEX_API_KEY=b"), "codex-api-key", 1},
		{"every variable needed", []acp.AuthOption{twoVars}, envOf("USER_ID=u"), "", 0},
		{"every variable set", []acp.AuthOption{twoVars}, envOf("USER_ID=u", "SECRET=s"), "pair", 1},
		{"only optional ones, none set", []acp.AuthOption{optional}, envOf(), "", 0},
		{"only optional ones, one set", []acp.AuthOption{optional}, envOf("REGION=eu"), "opt", 1},
		{"agent methods are never automatic", []acp.AuthOption{{ID: "x", Kind: acp.AuthKindAgent}}, envOf("X=1"), "", 0},
		{"env_var without variables", []acp.AuthOption{{ID: "x", Kind: acp.AuthKindEnvVar}}, envOf(), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := autoAuthMethod(tt.opts, tt.env)
			var got acp.AuthMethodID
			if o != nil {
				got = o.ID
			}
			if got != tt.want || n != tt.count {
				t.Fatalf("autoAuthMethod = %q, %d; want %q, %d", got, n, tt.want, tt.count)
			}
		})
	}
}

func TestNextStep(t *testing.T) {
	agent := []string{"npx", "@agentclientprotocol/codex-acp", "it's"}
	tests := []struct {
		o    acp.AuthOption
		want string
	}{
		{codexMethods[0], "acpterm run --auth chatgpt [FLAGS] -- npx @agentclientprotocol/codex-acp 'it'\\''s'"},
		{codexMethods[1], "export CODEX_API_KEY=…   (acpterm then uses it by itself, or pass --auth codex-api-key)"},
		{acp.AuthOption{ID: "openai", Kind: acp.AuthKindTerminal, Args: []string{"--auth-type=openai"}},
			"acpterm login --method openai -- npx @agentclientprotocol/codex-acp 'it'\\''s'"},
		// An ID the agent chose to break the line: quoted, so the command
		// stays one line and pastes as the same ID.
		{acp.AuthOption{ID: "x\x1b[2J;rm -rf ~", Kind: acp.AuthKindAgent},
			"acpterm run --auth $'x\\x1b[2J;rm -rf ~' [FLAGS] -- npx @agentclientprotocol/codex-acp 'it'\\''s'"},
		{acp.AuthOption{ID: "k", Kind: acp.AuthKindEnvVar, Vars: []acp.AuthVar{{Name: "A"}, {Name: "B", Optional: true}, {Name: "C"}}},
			"export A=… C=…   (acpterm then uses it by itself, or pass --auth k)"},
		{acp.AuthOption{ID: "f", Kind: "oauth2"}, "(acpterm cannot use methods of type oauth2)"},
	}
	for _, tt := range tests {
		if got := nextStep(agent, &tt.o); got != tt.want {
			t.Errorf("nextStep(%q)\n got %q\nwant %q", tt.o.ID, got, tt.want)
		}
	}
}

func TestAuthHelpSanitizes(t *testing.T) {
	opts := []acp.AuthOption{{ID: "a", Name: "Evil\x1b]0;title\x07", Description: "line\nbreak\u202e", Kind: acp.AuthKindEnvVar,
		Vars: []acp.AuthVar{{Name: "K\x1b[31m"}}, Link: "https://x\r"}}
	for _, line := range authHelp([]string{"agent"}, opts) {
		if strings.ContainsAny(line, "\x1b\x07\n\r\u202e") {
			t.Errorf("unsanitized line %q", line)
		}
	}
	if got := authHelp(nil, nil); len(got) != 1 || !strings.Contains(got[0], "no authentication methods") {
		t.Errorf("authHelp without methods = %q", got)
	}
}

func TestAuthErrorText(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&acp.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`"OPENAI_API_KEY is not set"`)},
			"Internal error (code -32603): OPENAI_API_KEY is not set"},
		{&acp.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"details":"x\u001b[2J"}`)},
			`Internal error (code -32603): {"details":"x\u001b[2J"}`},
		{&acp.Error{Code: -32000, Message: "nope\x1b[2J", Data: json.RawMessage(`null`)}, `nope\x1b[2J (code -32000)`},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		if got := authErrorText(tt.err); got != tt.want {
			t.Errorf("authErrorText(%v)\n got %q\nwant %q", tt.err, got, tt.want)
		}
	}
	long := &acp.Error{Code: 1, Message: "m", Data: json.RawMessage(`"` + strings.Repeat("é", 400) + `"`)}
	if got := authErrorText(long); len(got) > 400 || !strings.HasSuffix(got, "é…") {
		t.Errorf("long data not cut at a character: %q", got)
	}
}

func TestWithAuthCapabilities(t *testing.T) {
	caps := WithCapabilities(&acp.ClientCapabilities{Meta: acp.Meta{"terminal_output": json.RawMessage("true")}})
	b, err := json.Marshal(caps)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"auth":{"terminal":true},"_meta":{"terminal-auth":true,"terminal_output":true}}`
	if string(b) != want {
		t.Fatalf("capabilities %s, want %s", b, want)
	}
}

// pipeTTY stands in for a terminal: a pipe that Close unblocks.
type pipeTTY struct {
	*io.PipeReader
}

func TestAskAuthMethod(t *testing.T) {
	cands := []*acp.AuthOption{&codexMethods[0], &codexMethods[1]}
	tests := []struct {
		input string
		want  acp.AuthMethodID
	}{
		{"2\n", "codex-api-key"},
		{" chatgpt \r\n", "chatgpt"},
		{"9\nzz\n1\n", "chatgpt"},
		{"\n", ""},
		{"", ""}, // end of input
	}
	for _, tt := range tests {
		r, w := io.Pipe()
		go func() {
			_, _ = io.WriteString(w, tt.input)
			w.Close()
		}()
		var out strings.Builder
		o, err := askAuthMethod(context.Background(), pipeTTY{r}, &out, "Pick:", cands)
		var got acp.AuthMethodID
		if o != nil {
			got = o.ID
		}
		if err != nil || got != tt.want {
			t.Errorf("input %q: %q, %v; want %q", tt.input, got, err, tt.want)
		}
		if !strings.HasPrefix(out.String(), "Pick:\n  1) Login with ChatGPT [chatgpt]: ") {
			t.Errorf("input %q: shown %q", tt.input, out.String())
		}
	}
}

// A question nobody answers ends with its context, and the reader is
// joined.
func TestAskAuthMethodCancelled(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedWriter
	out.onWrite = func(s string) {
		if strings.Contains(s, "method [1-1") {
			cancel()
		}
	}
	o, err := askAuthMethod(ctx, pipeTTY{r}, &out, "Pick:", []*acp.AuthOption{&codexMethods[0]})
	if o != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, %v; want context.Canceled", o, err)
	}
	// The reader goroutine is gone (TestMain's goleak checks), whether it
	// was waiting to be asked or blocked in Read, which closing ends.
}

// lockedWriter calls onWrite with each write.
type lockedWriter struct {
	strings.Builder
	onWrite func(string)
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.onWrite(string(p))
	return w.Builder.Write(p)
}
