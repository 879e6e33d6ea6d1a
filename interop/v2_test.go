package interop

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// v2Client records what a Go v2 client hears, and signals terminal exits.
type v2Client struct {
	mu      sync.Mutex
	updates []acp.V2SessionUpdate
	exited  chan acp.TerminalID
}

func (c *v2Client) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (c *v2Client) SessionUpdate(context.Context, *acp.SessionNotification) error {
	return errors.New("a v2 connection must call SessionUpdateV2")
}

func (c *v2Client) SessionUpdateV2(_ context.Context, n *acp.V2UpdateSessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	if t, ok := n.Update.(*acp.V2TerminalUpdate); ok && t.ExitStatus != nil {
		c.exited <- t.TerminalID
	}
	return nil
}

// TestGoClientTSAgentV2: the Go SDK's client over ACP v2 against the official SDK's v2 agent
// (experimental/v2), ts/v2-agent.mjs.
func TestGoClientTSAgentV2(t *testing.T) {
	t.Parallel()
	requireNode(t)
	ctx := testCtx(t, time.Minute)
	c := &v2Client{exited: make(chan acp.TerminalID, 4)}
	conn, err := acp.StartAgent(nodeCmd(ctx, "v2-agent.mjs"), c, &acp.ConnOptions{Logf: t.Logf, OfferV2: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	init, err := conn.Initialize(ctx, &acp.InitializeRequest{ClientInfo: &acp.Implementation{Name: "acpterm-interop-go-client", Version: "1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if conn.ProtocolVersion() != acp.ProtocolVersion2 || init.AgentInfo.Name != "acpterm-interop-v2-agent" ||
		!init.AgentCapabilities.PromptCapabilities.EmbeddedContext || len(init.AuthMethods) != 1 {
		t.Fatalf("initialize: version %d, %s", conn.ProtocolVersion(), mustJSON(init))
	}
	if _, err := conn.Authenticate(ctx, &acp.AuthenticateRequest{MethodID: "ts-login"}); err != nil {
		t.Fatalf("auth/login: %v", err)
	}
	sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := &v2Run{ctx: ctx, conn: conn, c: c, sid: sess.SessionID, view: conn.View(sess.SessionID)}
	t.Run("turn", r.turn)
	t.Run("error", r.errorReply)
	t.Run("resume", r.resume)
	t.Run("wire", r.wire)
}

// v2Run is the session of TestGoClientTSAgentV2, which its subtests share.
type v2Run struct {
	ctx  context.Context
	conn *acp.ClientConn
	c    *v2Client
	sid  acp.SessionID
	view *acp.SessionView
}

func (r *v2Run) prompt(text string) (*acp.PromptResponse, error) {
	return r.conn.Prompt(r.ctx, &acp.PromptRequest{SessionID: r.sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: text}}})
}

// turn: a turn leaves a message, a completed tool call and a background
// terminal, which terminal/cancel ends.
func (r *v2Run) turn(t *testing.T) {
	view := r.view
	resp, err := r.prompt("hello")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	msgs := view.Messages()
	if len(msgs) != 1 || len(msgs[0].Content) != 2 {
		t.Errorf("messages %s", mustJSON(msgs))
	}
	tc := view.ToolCall("ts-tool-1")
	if tc == nil || tc.Title != nil || tc.Status == nil || *tc.Status != acp.V2ToolCallStatusCompleted || tc.Kind == nil || len(tc.Content) != 1 {
		t.Errorf("tool call %s: want completed, title cleared, kind kept, the terminal as content", mustJSON(tc))
	}
	items, reported := view.Background()
	if !reported || len(items) != 1 || items[0].Terminal == nil || !items[0].Cancellable {
		t.Fatalf("background %s (reported %v)", mustJSON(items), reported)
	}
	term := items[0].Terminal.TerminalID
	if got := string(view.TerminalOutput(term)); got != "building...\n" {
		t.Errorf("terminal output %q", got)
	}
	r.cancelTerminal(t, term)
}

// cancelTerminal cancels the background terminal term, which exits by
// SIGTERM and cannot be cancelled again.
func (r *v2Run) cancelTerminal(t *testing.T, term acp.TerminalID) {
	t.Helper()
	ctx := r.ctx
	if _, err := r.conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: r.sid, TerminalID: term}); err != nil {
		t.Fatalf("terminal/cancel: %v", err)
	}
	select {
	case id := <-r.c.exited:
		if id != term {
			t.Errorf("exit of %q, want %q", id, term)
		}
	case <-ctx.Done():
		t.Fatal("no exit status after terminal/cancel")
	}
	st := r.view.Terminal(term)
	if st.ExitStatus == nil || st.ExitStatus.Signal == nil || *st.ExitStatus.Signal != "SIGTERM" || st.Capabilities != nil {
		t.Errorf("terminal after cancel %s", mustJSON(st))
	}
	if _, err := r.conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: r.sid, TerminalID: term}); !errors.Is(err, acp.ErrNotCancellable) {
		t.Errorf("a second cancel: %v, want ErrNotCancellable without asking the agent", err)
	}
}

func (r *v2Run) errorReply(t *testing.T) {
	_, err := r.prompt("fail")
	var pe *acp.PeerError
	if !errors.As(err, &pe) || pe.Err.Code != acp.CodeInternalError || pe.Err.Message != "the TS model is gone" {
		t.Errorf("err = %v", err)
	}
}

func (r *v2Run) resume(t *testing.T) {
	if _, err := r.conn.ResumeSessionV2(r.ctx, &acp.V2ResumeSessionRequest{SessionID: r.sid, Cwd: "/tmp", ReplayFrom: &acp.V2ReplayFromStart{}}); err != nil {
		t.Fatal(err)
	}
	if msgs := r.view.Messages(); len(msgs) != 1 || msgs[0].ID != "replayed-1" {
		t.Errorf("after replay: %s", mustJSON(msgs))
	}
	if _, ok := r.view.State().(*acp.V2IdleStateUpdate); !ok {
		t.Errorf("state after resume %T", r.view.State())
	}
}

func (r *v2Run) wire(t *testing.T) {
	if _, err := r.prompt("wire"); err != nil {
		t.Fatal(err)
	}
	msgs := r.view.Messages()
	last := msgs[len(msgs)-1]
	tx, ok := last.Content[0].(*acp.V2TextContent)
	if !ok {
		t.Fatalf("last message %s", mustJSON(last))
	}
	var check obj
	if err := json.Unmarshal([]byte(tx.Text), &check); err != nil {
		t.Fatal(err)
	}
	check["problems"] = withoutV1Offer(check["problems"].([]any))
	checkWire(t, check)
	wantJSON(t, check, "logins", 1)
}

// withoutV1Offer drops from the wire check's problems the fields that the
// offer of 2 carries for an agent that only speaks v1 and answers 1 (v1's
// clientInfo and clientCapabilities, see ClientConn.Initialize): a v2
// agent drops them, as it should.
func withoutV1Offer(all []any) []any {
	var problems []any
	for _, p := range all {
		o := obj(p.(map[string]any))
		if o.str("method") == "initialize" && (o.str("path") == "/clientInfo" || o.str("path") == "/clientCapabilities") {
			continue
		}
		problems = append(problems, p)
	}
	return problems
}
