package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// orderRounds is how many tool-call/permission pairs the order agent sends.
const orderRounds = 1000

func init() {
	registerHostile("order", func() int { return serveAgent(&orderAgent{}) })
	registerHostile("cancel-endturn", func() int { return serveAgent(&endTurnOnCancel{cancelled: make(chan struct{})}) })
	registerHostile("made-up-sessions", func() int { return serveAgent(&madeUpSessionsAgent{}) })
}

// serveAgent serves a on stdio until the client goes away; a fake agent
// that calls the client takes its connection through SetConn
// (acp.AgentConnSetter). An error that ended the serving is a failure of
// the fake agent, so it says so and exits 1.
func serveAgent(a acp.Agent) int {
	if err := acp.ServeAgent(context.Background(), a, os.Stdin, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		return 1
	}
	return 0
}

// baseAgent answers initialize and session/new and ignores cancels. SetConn
// runs before serving, so conn needs no atomic; it stays one because the
// agents that embed baseAgent Load it.
type baseAgent struct{ conn atomic.Pointer[acp.AgentConn] }

func (a *baseAgent) SetConn(c *acp.AgentConn) { a.conn.Store(c) }

func (a *baseAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}, nil
}

func (a *baseAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_hostile"}, nil
}

func (a *baseAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

// orderAgent announces orderRounds tool calls, each followed on the wire
// by a permission request for it, without waiting for the answers (up to
// 32 outstanding): the client must never ask about a tool call it has not
// shown yet.
type orderAgent struct{ baseAgent }

func (a *orderAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	var wg sync.WaitGroup
	var failed atomic.Value
	slots := make(chan struct{}, 32)
	for i := range orderRounds {
		id := acp.ToolCallID("call_" + strconv.Itoa(i))
		title := "step " + strconv.Itoa(i)
		err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.ToolCall{
			ToolCallID: id, Title: title, Kind: acp.ToolKindEdit, Status: acp.ToolCallStatusPending,
		}})
		if err != nil {
			return nil, err
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := conn.RequestPermission(ctx, &acp.RequestPermissionRequest{
				SessionID: req.SessionID,
				ToolCall:  acp.ToolCallUpdate{ToolCallID: id, Title: &title},
				Options:   []acp.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
			})
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// endTurnOnCancel waits for session/cancel and then ends the turn with
// end_turn, as some agents do, instead of the "cancelled" the spec asks for.
type endTurnOnCancel struct {
	baseAgent
	once      sync.Once
	cancelled chan struct{}
}

func (a *endTurnOnCancel) Cancel(ctx context.Context, n *acp.CancelNotification) error {
	a.once.Do(func() { close(a.cancelled) })
	return nil
}

func (a *endTurnOnCancel) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: "working until cancelled\n"},
	}})
	// The client's cancel can end ctx while the notification's write is
	// reported: under load, Notify may then say ctx.Err() for a message
	// the client read (and the test, which waits for it, saw). This agent
	// claims end_turn after a cancel whatever happened.
	if err != nil && !errors.Is(context.Cause(ctx), acp.ErrTurnCancelled) {
		return nil, err
	}
	// The SDK cancels ctx on session/cancel, then calls Cancel; either
	// way this agent claims the turn ended normally.
	select {
	case <-a.cancelled:
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), acp.ErrTurnCancelled) {
			return nil, ctx.Err()
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// TestHostileWireOrder: a permission request is handled only after every
// notification that arrived before it, so the user is never asked about a
// tool call that is not on screen.
func TestHostileWireOrder(t *testing.T) {
	t.Parallel()
	// Over v2 the permission requests come in v2's words (a title and the
	// tool call as subject), and tool calls as upserts.
	for _, protocol := range []string{"1", "2"} {
		t.Run("protocol"+protocol, func(t *testing.T) {
			t.Parallel()
			wireOrder(t, protocol)
		})
	}
}

func wireOrder(t *testing.T, protocol string) {
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=order"}},
		"run", "--format", "json", "--approve-all", "--protocol", protocol, "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	shown := map[string]bool{}
	var permissions, inversions int
	for _, ev := range parseEvents(t, r.stdout) {
		switch ev.str("event") {
		case "session_update":
			if u := ev.update(); u["sessionUpdate"] == "tool_call" {
				id, _ := u["toolCallId"].(string)
				shown[id] = true
			}
		case "permission":
			permissions++
			if id := ev.str("toolCallId"); !shown[id] {
				inversions++
				if inversions <= 3 {
					t.Errorf("permission for %s came before its tool call", id)
				}
			}
		}
	}
	if permissions != orderRounds || inversions != 0 {
		t.Fatalf("%d permission events (want %d), %d before their tool call (want 0)", permissions, orderRounds, inversions)
	}
}

// TestHostileCancelEndTurn: a turn the user cancelled is reported as
// cancelled, with exit status 130, even when the agent answers end_turn.
func TestHostileCancelEndTurn(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			s := startAcpterm(t, []string{fakeAgentEnv + "=cancel-endturn"},
				"run", "--format", format, "--no-color", "-p", "go", "--", testExe(t))
			s.stdout.waitFor(t, "working until cancelled")
			if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			stdout, stderr := s.finish(t, 130)
			mustContain(t, "stderr", stderr, `the agent ended the cancelled turn with stop reason "end_turn"`)
			if format == "json" {
				evs := parseEvents(t, stdout)
				if last := evs[len(evs)-1]; last.str("event") != "stop" || last.str("stopReason") != "cancelled" {
					t.Fatalf("last event %v", last)
				}
			} else {
				mustContain(t, "stdout", stdout, "turn cancelled")
			}
			if d := time.Since(s.start); d > 20*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// madeUpSessionsAgent creates its terminals in sessions it makes up, one
// each, to get past the bound on a session's terminals, and says how many
// it got.
type madeUpSessionsAgent struct{ baseAgent }

// madeUpTries is how many terminals madeUpSessionsAgent asks for.
const madeUpTries = 6

func (a *madeUpSessionsAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	var got []*acp.TerminalHandle
	refused := 0
	for i := range madeUpTries {
		term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: acp.SessionID(fmt.Sprint("made_up_", i)), Command: "sleep 30"})
		if err != nil {
			refused++
			continue
		}
		got = append(got, term)
	}
	for _, term := range got {
		if err := term.Release(ctx); err != nil {
			return nil, err
		}
	}
	err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: fmt.Sprintf("created %d, refused %d\n", len(got), refused)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// TestHostileMadeUpSessions: --max-terminals bounds the agent's terminals,
// not only those of the session acpterm opened; the session ID of a
// terminal/create is the agent's to write.
func TestHostileMadeUpSessions(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=made-up-sessions"}},
		"run", "--max-terminals", "2", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if want := fmt.Sprintf("created 2, refused %d", madeUpTries-2); !strings.Contains(r.stdout, want) {
		t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
	}
}
