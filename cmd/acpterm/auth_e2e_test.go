package main

// Authentication, end to end: fake agents that advertise the methods real
// agents send (recorded from npm, @zed-industries/codex-acp 0.16.0 and
// @qwen-code/qwen-code 0.24.4) and refuse session/new with -32000 until the
// client has authenticated, or a terminal login has left a token behind.
// The terminal logins through a pty are in auth_pty_linux_test.go.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// Recorded authMethods, verbatim.
const (
	codexAuthMethods = `[
 {"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)"},
 {"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","description":"Requires setting the ` + "`CODEX_API_KEY`" + ` environment variable.","vars":[{"name":"CODEX_API_KEY"}]},
 {"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable.","vars":[{"name":"OPENAI_API_KEY"}]}]`
	qwenAuthMethods = `[{"id":"openai","name":"Use OpenAI API key","description":"Requires setting the ` + "`OPENAI_API_KEY`" + ` environment variable","_meta":{"type":"terminal","args":["--auth-type=openai"]}}]`
	// The standard terminal method, advertised only to a client that
	// offers clientCapabilities.auth.terminal.
	standardAuthMethods = `[{"type":"terminal","id":"tui-login","name":"Log in in the terminal","description":"Opens the login screen","args":["--login"],"env":{"FAKE_LOGIN_MODE":"tui"}}]`
)

// Environment of the fake auth agents.
const (
	// fakeAuthForm chooses what the agent advertises: codex, qwen,
	// standard or zed (the legacy _meta["terminal-auth"] form).
	fakeAuthForm = "FAKE_AUTH_FORM"
	// fakeTokenFile is where a terminal login leaves its token; session/new
	// succeeds once it holds loginToken.
	fakeTokenFile = "FAKE_AUTH_TOKEN_FILE"
	// fakeAuthNever makes session/new answer -32000 even after authenticate.
	fakeAuthNever = "FAKE_AUTH_NEVER"
	// fakeChatGPTFail makes authenticate with chatgpt fail with data.
	fakeChatGPTFail = "FAKE_CHATGPT_FAIL"
	// fakeMarkFile is where the shell and preload forms' login command
	// writes that it ran, with the BASH_ENV it saw.
	fakeMarkFile = "FAKE_MARK_FILE"
	loginToken   = "s3cret"
)

// shellLoginScript is the shell and preload forms' login: a program the
// agent names (/bin/sh -c), not the agent itself, which leaves a mark and
// a token.
const shellLoginScript = `echo "ran BASH_ENV=$BASH_ENV" > "$FAKE_MARK"; printf 's3cret sh' > "$FAKE_AUTH_TOKEN_FILE"`

func init() {
	registerHostile("auth", func() int {
		if slices.Contains(os.Args[1:], "--login") || slices.Contains(os.Args[1:], "--auth-type=openai") {
			return fakeLogin()
		}
		return serveAgent(&authAgent{form: os.Getenv(fakeAuthForm)})
	})
}

// fakeLogin is the agent's interactive login: it asks for a token on its
// terminal and saves it with the login's FAKE_LOGIN_MODE.
func fakeLogin() int {
	fmt.Print("Paste your token: ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if tok := strings.TrimSpace(line); tok != loginToken {
		fmt.Printf("wrong token %q\n", tok)
		return 1
	}
	data := loginToken + " " + os.Getenv("FAKE_LOGIN_MODE")
	if err := os.WriteFile(os.Getenv(fakeTokenFile), []byte(data), 0o600); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("token saved")
	return 0
}

// authAgent needs authentication before it opens a session.
type authAgent struct {
	baseAgent
	form string

	mu       sync.Mutex
	authed   acp.AuthMethodID
	rejected int // session/new answered -32000
	offered  string
}

func (a *authAgent) methods() string {
	switch a.form {
	case "codex":
		return codexAuthMethods
	case "qwen":
		return qwenAuthMethods
	case "standard":
		return standardAuthMethods
	case "zed":
		exe, _ := os.Executable()
		b, _ := json.Marshal(exe)
		return `[{"id":"zed-login","name":"Log in","_meta":{"terminal-auth":{"command":` + string(b) +
			`,"args":["--login"],"label":"fake /login","env":{"FAKE_LOGIN_MODE":"zed"}}}}]`
	case "shell", "preload":
		script, _ := json.Marshal(shellLoginScript)
		mark, _ := json.Marshal(os.Getenv(fakeMarkFile))
		env := `{"FAKE_MARK":` + string(mark)
		if a.form == "preload" {
			env += `,"LD_PRELOAD":"/nonexistent/acpterm-test.so","BASH_ENV":"/nonexistent/acpterm-test.rc"`
		}
		env += "}"
		return `[{"id":"sh-login","name":"Log in","_meta":{"terminal-auth":{"command":"/bin/sh","args":["-c",` +
			string(script) + `],"label":"shell login","env":` + env + `}}}]`
	}
	return `[]`
}

func (a *authAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	caps := req.ClientCapabilities
	terminalAuth := caps != nil && caps.Auth != nil && caps.Auth.Terminal
	legacy := caps != nil && string(caps.Meta[acp.MetaTerminalAuth]) == "true"
	resp := &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}
	// As the spec asks: terminal methods only to a client that runs them.
	if (a.form == "standard" && !terminalAuth) || (a.form == "zed" && !legacy) {
		return resp, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(a.methods()), &raws); err != nil {
		return nil, err
	}
	for _, raw := range raws {
		resp.AuthMethods = append(resp.AuthMethods, &acp.UnknownAuthMethod{Kind: "recorded", Raw: raw})
	}
	return resp, nil
}

func (a *authAgent) Authenticate(ctx context.Context, req *acp.AuthenticateRequest) (*acp.AuthenticateResponse, error) {
	need := map[acp.AuthMethodID]string{"codex-api-key": "CODEX_API_KEY", "openai-api-key": "OPENAI_API_KEY"}
	switch id := req.MethodID; {
	case a.form != "codex":
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "terminal methods are not for authenticate: " + string(id)}
	case need[id] != "":
		if os.Getenv(need[id]) == "" {
			// What codex-acp answers.
			return nil, &acp.Error{Code: acp.CodeInternalError, Message: "Internal error", Data: json.RawMessage(`"` + need[id] + ` is not set"`)}
		}
	case id == "chatgpt":
		if os.Getenv(fakeChatGPTFail) != "" {
			return nil, &acp.Error{Code: acp.CodeInternalError, Message: "Internal error", Data: json.RawMessage(`"no browser here"`)}
		}
	default:
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "unknown method " + string(id)}
	}
	a.mu.Lock()
	a.authed = req.MethodID
	a.mu.Unlock()
	return &acp.AuthenticateResponse{}, nil
}

func (a *authAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tok, _ := os.ReadFile(os.Getenv(fakeTokenFile))
	if a.authed != "" && os.Getenv(fakeAuthNever) == "" {
		return &acp.NewSessionResponse{SessionID: "sess_auth"}, nil
	}
	if t := string(tok); strings.HasPrefix(t, loginToken+" ") {
		a.offered = "token:" + strings.TrimPrefix(t, loginToken+" ")
		return &acp.NewSessionResponse{SessionID: "sess_auth"}, nil
	}
	a.rejected++
	e := &acp.Error{Code: acp.CodeAuthRequired, Message: "Authentication required"}
	if a.form == "qwen" {
		// qwen-code repeats its methods in the error.
		e.Data = json.RawMessage(`{"authMethods":` + qwenAuthMethods + `}`)
	}
	return nil, e
}

func (a *authAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	a.mu.Lock()
	text := fmt.Sprintf("session ok (auth=%s%s, rejected=%d)", a.authed, a.offered, a.rejected)
	a.mu.Unlock()
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
		Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// authEnv is the environment of a fake auth agent run: no API keys unless
// added, whatever the machine has.
func authEnv(form string, extra ...string) []string {
	return append([]string{fakeAgentEnv + "=auth", fakeAuthForm + "=" + form, "CODEX_API_KEY=", "OPENAI_API_KEY=",
		fakeTokenFile + "=/nonexistent/token"}, extra...)
}

func TestAuthRun(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	tests := []struct {
		name   string
		env    []string
		flags  []string
		code   int
		stdout string   // in stdout, when code is 0
		stderr []string // in stderr, in this order
		last   string   // the last stderr line
	}{
		{
			name:   "env var chosen automatically",
			env:    authEnv("codex", "CODEX_API_KEY=k"),
			stdout: "session ok (auth=codex-api-key, rejected=1)",
			stderr: []string{"acpterm: authenticating with codex-api-key (CODEX_API_KEY set)\n"},
		},
		{
			name:   "--auth before session/new",
			env:    authEnv("codex"),
			flags:  []string{"--auth", "chatgpt"},
			stdout: "session ok (auth=chatgpt, rejected=0)",
			stderr: []string{"acpterm: authenticating with chatgpt\n"},
		},
		{
			name:   "--auth env var",
			env:    authEnv("codex", "CODEX_API_KEY=k", "OPENAI_API_KEY=k"),
			flags:  []string{"--auth", "openai-api-key"},
			stdout: "session ok (auth=openai-api-key, rejected=0)",
		},
		{
			name: "no method usable: the methods and the next commands",
			env:  authEnv("codex"),
			code: 3,
			stderr: []string{
				"The agent offers these ways to log in; run one of the commands, then run again:\n",
				"  Login with ChatGPT [chatgpt]: Use your ChatGPT login with Codex CLI (requires a paid ChatGPT subscription)\n",
				"      acpterm run --auth chatgpt [FLAGS] -- " + exe + "\n",
				"  Use CODEX_API_KEY [codex-api-key]: Requires setting the `CODEX_API_KEY` environment variable. (variables: CODEX_API_KEY)\n",
				"      export CODEX_API_KEY=…   (acpterm then uses it by itself, or pass --auth codex-api-key)\n",
				"  Use OPENAI_API_KEY [openai-api-key]: Requires setting the `OPENAI_API_KEY` environment variable. (variables: OPENAI_API_KEY)\n",
				"      export OPENAI_API_KEY=…   (acpterm then uses it by itself, or pass --auth openai-api-key)\n",
			},
			last: "acpterm: the agent needs authentication (Authentication required)",
		},
		{
			name: "two env vars set: no guess",
			env:  authEnv("codex", "CODEX_API_KEY=k", "OPENAI_API_KEY=k"),
			code: 3,
			last: "acpterm: the agent needs authentication (Authentication required); the variables of 2 methods are set, so acpterm did not choose: pass --auth ID",
		},
		{
			name: "still required after authenticate",
			env:  authEnv("codex", "CODEX_API_KEY=k", fakeAuthNever+"=1"),
			code: 3,
			stderr: []string{
				"acpterm: authenticating with codex-api-key (CODEX_API_KEY set)\n",
				"      export CODEX_API_KEY=…",
			},
			last: "acpterm: the agent needs authentication (Authentication required) after authenticate with codex-api-key",
		},
		{
			name:   "authenticate fails",
			env:    authEnv("codex", fakeChatGPTFail+"=1"),
			flags:  []string{"--auth", "chatgpt"},
			code:   3,
			stderr: []string{"acpterm run --auth chatgpt"},
			last:   "acpterm: authenticate with chatgpt failed: Internal error (code -32603): no browser here",
		},
		{
			name:  "--auth unknown",
			env:   authEnv("codex"),
			flags: []string{"--auth", "nosuch"},
			code:  2,
			last:  "acpterm: --auth nosuch: the agent offers no such method (it offers chatgpt, codex-api-key, openai-api-key)",
		},
		{
			name:  "--auth without its variable",
			env:   authEnv("codex"),
			flags: []string{"--auth", "openai-api-key"},
			code:  2,
			last:  "acpterm: --auth openai-api-key needs OPENAI_API_KEY set in the environment: export OPENAI_API_KEY=…   (acpterm then uses it by itself, or pass --auth openai-api-key)",
		},
		{
			name:  "--auth a terminal method",
			env:   authEnv("standard"),
			flags: []string{"--auth", "tui-login"},
			code:  2,
			last:  "acpterm: --auth tui-login: this method is a terminal login; run: acpterm login --method tui-login -- " + exe,
		},
		{
			name: "terminal method (standard): the login command",
			env:  authEnv("standard"),
			code: 3,
			stderr: []string{
				"  Log in in the terminal [tui-login], a terminal login: Opens the login screen\n",
				"      acpterm login --method tui-login -- " + exe + "\n",
			},
			last: "acpterm: the agent needs authentication (Authentication required)",
		},
		{
			name: "terminal method (qwen's _meta form)",
			env:  authEnv("qwen"),
			code: 3,
			stderr: []string{
				"  Use OpenAI API key [openai], a terminal login: Requires setting the `OPENAI_API_KEY` environment variable\n",
				"      acpterm login --method openai -- " + exe + "\n",
			},
		},
		{
			name:   "terminal method (zed's legacy terminal-auth)",
			env:    authEnv("zed"),
			code:   3,
			stderr: []string{"  Log in [zed-login], a terminal login: fake /login\n", "      acpterm login --method zed-login -- " + exe + "\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--sandbox", "off"}, tt.flags...), "-p", "hi", "--", exe)
			r := acpterm(t, opts{plain: true, env: tt.env}, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.stdout != "" && !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, r.stdout)
			}
			rest := r.stderr
			for _, want := range tt.stderr {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stderr lacks %q (in order):\n%s", want, r.stderr)
				}
				rest = rest[i+len(want):]
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if last := lines[len(lines)-1]; tt.last != "" && last != tt.last {
				t.Errorf("last stderr line\n  %q\nwant\n  %q", last, tt.last)
			}
		})
	}
}

// The methods also come with --format json: stdout has the error event,
// stderr the methods.
func TestAuthRunJSON(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{plain: true, env: authEnv("codex")}, "run", "--sandbox", "off", "--format", "json", "-p", "hi", "--", testExe(t))
	if r.code != 3 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	if len(evs) != 1 || evs[0].str("event") != "error" || evs[0].str("message") != "the agent needs authentication (Authentication required)" {
		t.Fatalf("events %v", evs)
	}
	mustContain(t, "stderr", r.stderr, "acpterm run --auth chatgpt")
}

// acpterm login with methods passed to authenticate, and without a
// terminal to choose on.
func TestAuthLogin(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	t.Run("authenticate method", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: authEnv("codex", "CODEX_API_KEY=k")}, "login", "--method", "codex-api-key", "--", exe)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: logging in with Use CODEX_API_KEY [codex-api-key]",
			"acpterm: logged in: the agent opens sessions now")
	})
	t.Run("the one env var set", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: authEnv("codex", "OPENAI_API_KEY=k")}, "login", "--", exe)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "[openai-api-key]", "acpterm: logged in")
	})
	t.Run("no choice without a terminal", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: authEnv("codex")}, "login", "--", exe)
		if r.code != 2 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm run --auth chatgpt", "acpterm: choose a method with --method ID")
	})
	t.Run("unknown method", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: authEnv("standard")}, "login", "--method", "x", "--", exe)
		if r.code != 2 || !strings.HasSuffix(r.stderr, "acpterm: --method x: the agent offers no such method (it offers tui-login)\n") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("login command fails", func(t *testing.T) {
		t.Parallel()
		// No terminal: the fake login reads an empty stdin, a wrong token.
		r := acpterm(t, opts{plain: true, env: authEnv("standard", fakeTokenFile+"="+filepath.Join(t.TempDir(), "tok"))}, "login", "--yes", "--", exe)
		if r.code != 3 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: running "+exe+" --login", "acpterm: the login command failed (exit status 1)")
	})
	t.Run("no agent", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true}, "login")
		if r.code != 2 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
}

// acpterm login and a terminal login the agent writes as it likes: a
// program it names (/bin/sh -c …) and variables that make programs run
// code (LD_PRELOAD, BASH_ENV). The command and every variable are shown;
// nothing runs without a yes (here --yes, there being no terminal), and
// the loader and startup variables need --allow-env each.
func TestAuthLoginConfirm(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	type run struct {
		form  string
		flags []string
		code  int
		ran   bool
		says  []string
	}
	for name, tt := range map[string]run{
		"shown, not run without a terminal": {"shell", nil, 2, false, []string{
			"acpterm: the agent's login command:\n  /bin/sh -c '" + strings.ReplaceAll(shellLoginScript, "'", `'\''`) + "'\n" +
				"  (a program the agent names, not the agent's own command line)\n  in ",
			"\n  with FAKE_MARK=",
			"acpterm: the login command was not run: there is no terminal to ask on; pass --yes to run it\n"}},
		"run with --yes": {"shell", []string{"--yes"}, 0, true, []string{
			"acpterm: running /bin/sh -c ", "acpterm: logged in"}},
		"loader variables refused": {"preload", []string{"--yes"}, 2, false, []string{
			"\n  with BASH_ENV=/nonexistent/acpterm-test.rc  (refused unless --allow-env BASH_ENV)\n",
			"\n  with LD_PRELOAD=/nonexistent/acpterm-test.so  (refused unless --allow-env LD_PRELOAD)\n",
			"acpterm: the login command was not run: the agent sets BASH_ENV, LD_PRELOAD (",
			"pass --allow-env BASH_ENV --allow-env LD_PRELOAD to allow it\n"}},
		"one allowed, one refused": {"preload", []string{"--yes", "--allow-env", "LD_PRELOAD"}, 2, false, []string{
			"acpterm: the login command was not run: the agent sets BASH_ENV (BASH_ENV: bash runs the file it names at start); pass --allow-env BASH_ENV to allow it\n"}},
		"both allowed": {"preload", []string{"--yes", "--allow-env", "LD_PRELOAD", "--allow-env", "BASH_ENV"}, 0, true, []string{
			"acpterm: logged in"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mark := filepath.Join(dir, "mark")
			env := authEnv(tt.form, fakeTokenFile+"="+filepath.Join(dir, "tok"), fakeMarkFile+"="+mark)
			r := acpterm(t, opts{plain: true, env: env}, append(append([]string{"login"}, tt.flags...), "--", exe)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tt.says...)
			b, err := os.ReadFile(mark)
			if ran := err == nil; ran != tt.ran {
				t.Fatalf("the login command ran: %v, want %v (mark %q)\n%s", ran, tt.ran, b, r.stderr)
			}
			if tt.ran && tt.form == "preload" && string(b) != "ran BASH_ENV=/nonexistent/acpterm-test.rc\n" {
				t.Fatalf("the allowed variable did not reach the command: mark %q", b)
			}
		})
	}
}
