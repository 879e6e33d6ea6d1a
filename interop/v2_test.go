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
	sid := sess.SessionID
	prompt := func(text string) (*acp.PromptResponse, error) {
		return conn.Prompt(ctx, &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: text}}})
	}
	view := conn.View(sid)

	t.Run("turn", func(t *testing.T) {
		resp, err := prompt("hello")
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
		if _, err := conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: sid, TerminalID: term}); err != nil {
			t.Fatalf("terminal/cancel: %v", err)
		}
		select {
		case id := <-c.exited:
			if id != term {
				t.Errorf("exit of %q, want %q", id, term)
			}
		case <-ctx.Done():
			t.Fatal("no exit status after terminal/cancel")
		}
		st := view.Terminal(term)
		if st.ExitStatus == nil || st.ExitStatus.Signal == nil || *st.ExitStatus.Signal != "SIGTERM" || st.Capabilities != nil {
			t.Errorf("terminal after cancel %s", mustJSON(st))
		}
		if _, err := conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: sid, TerminalID: term}); !errors.Is(err, acp.ErrNotCancellable) {
			t.Errorf("a second cancel: %v, want ErrNotCancellable without asking the agent", err)
		}
	})

	t.Run("error", func(t *testing.T) {
		_, err := prompt("fail")
		var pe *acp.PeerError
		if !errors.As(err, &pe) || pe.Err.Code != acp.CodeInternalError || pe.Err.Message != "the TS model is gone" {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("resume", func(t *testing.T) {
		if _, err := conn.ResumeSessionV2(ctx, &acp.V2ResumeSessionRequest{SessionID: sid, Cwd: "/tmp", ReplayFrom: &acp.V2ReplayFromStart{}}); err != nil {
			t.Fatal(err)
		}
		if msgs := view.Messages(); len(msgs) != 1 || msgs[0].ID != "replayed-1" {
			t.Errorf("after replay: %s", mustJSON(msgs))
		}
		if _, ok := view.State().(*acp.V2IdleStateUpdate); !ok {
			t.Errorf("state after resume %T", view.State())
		}
	})

	t.Run("wire", func(t *testing.T) {
		if _, err := prompt("wire"); err != nil {
			t.Fatal(err)
		}
		msgs := view.Messages()
		last := msgs[len(msgs)-1]
		tx, ok := last.Content[0].(*acp.V2TextContent)
		if !ok {
			t.Fatalf("last message %s", mustJSON(last))
		}
		var check obj
		if err := json.Unmarshal([]byte(tx.Text), &check); err != nil {
			t.Fatal(err)
		}
		// The offer of 2 carries v1's clientInfo and clientCapabilities as
		// well, for an agent that only speaks v1 and answers 1 (see
		// ClientConn.Initialize); a v2 agent drops them, as it should.
		var problems []any
		for _, p := range check["problems"].([]any) {
			o := obj(p.(map[string]any))
			if o.str("method") == "initialize" && (o.str("path") == "/clientInfo" || o.str("path") == "/clientCapabilities") {
				continue
			}
			problems = append(problems, p)
		}
		check["problems"] = problems
		checkWire(t, check)
		wantJSON(t, check, "logins", 1)
	})
}
