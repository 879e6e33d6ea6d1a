package login

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
)

// needsLogin is an agent that answers session/new with -32000 until
// authenticate succeeds with the method ok.
type needsLogin struct {
	ok acp.AuthMethodID
	mu sync.Mutex
	// calls are the methods called, in order, with authenticate's
	// method ID.
	calls  []string
	authed bool
}

func (a *needsLogin) record(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, s)
}

func (a *needsLogin) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *needsLogin) Authenticate(_ context.Context, req *acp.AuthenticateRequest) (*acp.AuthenticateResponse, error) {
	a.record("authenticate " + string(req.MethodID))
	if req.MethodID != a.ok {
		return nil, &acp.Error{Code: -32603, Message: "no such login"}
	}
	a.mu.Lock()
	a.authed = true
	a.mu.Unlock()
	return &acp.AuthenticateResponse{}, nil
}

func (a *needsLogin) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.record("session/new")
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.authed {
		return nil, acp.ErrAuthRequired
	}
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}

func (a *needsLogin) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

type nopClient struct{}

func (nopClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (nopClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

// fakeHost is a Host over an in-memory connection; what the session says
// is kept.
type fakeHost struct {
	conn *acp.ClientConn
	mu   sync.Mutex
	said []string
}

func (h *fakeHost) Conn() *acp.ClientConn { return h.conn }

func (h *fakeHost) CallCtx(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return context.WithCancel(ctx)
}

func (h *fakeHost) CallFailed(_ context.Context, method string, err error) (int, string) {
	return exitcode.Agent, method + ": " + err.Error()
}

func (h *fakeHost) Warn(line string) { h.Say(line) }

func (h *fakeHost) Say(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.said = append(h.said, line)
}

func (h *fakeHost) Suspend() func() { return func() {} }

// connect joins a ClientConn to agent through pipes and initializes it.
func connect(t *testing.T, agent acp.Agent) *fakeHost {
	t.Helper()
	ar, cw := io.Pipe()
	cr, aw := io.Pipe()
	ac := acp.NewAgentConn(agent, ar, aw, nil)
	cc := acp.NewClientConn(nopClient{}, cr, cw, nil)
	t.Cleanup(func() {
		cw.Close()
		aw.Close()
		_ = cc.Close()
		_ = ac.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cc.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion1}); err != nil {
		t.Fatal(err)
	}
	return &fakeHost{conn: cc}
}

func newSession(ctx context.Context, s *Session, h *fakeHost) (int, string) {
	return s.Call(ctx, "session/new", func(ctx context.Context) error {
		_, err := h.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
		return err
	})
}

// A Session opens the session, authenticating once when the agent
// answers -32000: with the env_var method whose variables are set, or up
// front with --auth; and with none it shows every way to log in.
func TestSessionCall(t *testing.T) {
	for _, tt := range []struct {
		name   string
		method string
		env    lookupFunc
		code   int
		calls  []string
		says   string // in what the session said
	}{
		{"the one method whose variables are set", "", envOf("CODEX_API_KEY=k"), exitcode.OK,
			[]string{"session/new", "authenticate codex-api-key", "session/new"}, "authenticating with codex-api-key (CODEX_API_KEY set)"},
		{"--auth up front", "codex-api-key", envOf("CODEX_API_KEY=k"), exitcode.OK,
			[]string{"authenticate codex-api-key", "session/new"}, "authenticating with codex-api-key"},
		{"two methods set: no guess", "", envOf("CODEX_API_KEY=k", "OPENAI_API_KEY=k"), exitcode.Agent,
			[]string{"session/new"}, "the variables of 2 methods are set, so acpterm did not choose: pass --auth ID"},
		{"a method that does not log in", "", envOf("OPENAI_API_KEY=k"), exitcode.Agent,
			[]string{"session/new", "authenticate openai-api-key"}, "authenticate with openai-api-key failed: no such login (code -32603)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agent := &needsLogin{ok: "codex-api-key"}
			h := connect(t, agent)
			ctx := context.Background()
			opts := &Options{Agent: []string{"codex-acp"}, Method: tt.method, InitTimeout: 10 * time.Second}
			s, code, msg := start(ctx, h, codexMethods, opts, tt.env)
			if s == nil {
				t.Fatalf("start: %d %s", code, msg)
			}
			code, msg = newSession(ctx, s, h)
			if code != tt.code {
				t.Fatalf("code %d (%s), want %d", code, msg, tt.code)
			}
			agent.mu.Lock()
			calls := slices.Clone(agent.calls)
			agent.mu.Unlock()
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("calls %q, want %q", calls, tt.calls)
			}
			said := strings.Join(append(h.said, msg), "\n")
			if !strings.Contains(said, tt.says) {
				t.Errorf("said:\n%s\nwant %q in it", said, tt.says)
			}
		})
	}
}
