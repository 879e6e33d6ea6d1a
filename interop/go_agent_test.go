package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
)

// goAgent is the Go SDK's agent that ts/sdk-client.mjs drives (the test
// binary re-executed with ACPTERM_INTEROP_ROLE=go-agent). Each prompt text
// names a scripted turn.
type goAgent struct {
	conn atomic.Pointer[acp.AgentConn]

	mu       sync.Mutex
	sessions map[acp.SessionID]string             // cwd
	turns    map[acp.SessionID]context.CancelFunc // the running turn's cancel
}

// serveGoAgent serves the agent on stdin and stdout until the client closes
// stdin.
func serveGoAgent() error {
	a := &goAgent{sessions: map[acp.SessionID]string{}, turns: map[acp.SessionID]context.CancelFunc{}}
	logger := log.New(os.Stderr, "go-agent: ", 0)
	conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, &acp.ConnOptions{Logf: logger.Printf})
	a.conn.Store(conn)
	<-conn.Done()
	conn.Close()
	return conn.Wait()
}

func (a *goAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{
		ProtocolVersion:   req.ProtocolVersion, // whichever the client asks for
		AgentCapabilities: &acp.AgentCapabilities{PromptCapabilities: &acp.PromptCapabilities{EmbeddedContext: true}},
		AgentInfo:         &acp.Implementation{Name: "acpterm-interop-go-agent", Version: "1.0.0"},
	}, nil
}

func (a *goAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := acp.SessionID(fmt.Sprintf("go-session-%d", len(a.sessions)+1))
	a.sessions[id] = req.Cwd
	return &acp.NewSessionResponse{SessionID: id}, nil
}

func (a *goAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel := a.turns[n.SessionID]; cancel != nil {
		cancel()
	}
	return nil
}

func (a *goAgent) Prompt(reqCtx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	ctx, cancel := context.WithCancel(reqCtx)
	defer cancel()
	a.mu.Lock()
	cwd, ok := a.sessions[req.SessionID]
	if ok {
		a.turns[req.SessionID] = cancel
	}
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: session %q", acp.ErrResourceNotFound, req.SessionID)
	}
	defer func() {
		a.mu.Lock()
		delete(a.turns, req.SessionID)
		a.mu.Unlock()
	}()

	var text string
	if len(req.Prompt) > 0 {
		if t, ok := req.Prompt[0].(*acp.TextContent); ok {
			text = t.Text
		}
	}
	t := turn{conn: a.conn.Load(), sid: req.SessionID}
	var err error
	switch text {
	case "hello":
		err = t.hello(ctx, cwd)
	case "wait-for-cancel", "block":
		// "waiting" is ended by session/cancel, "blocking" by the
		// client's $/cancel_request for this very prompt.
		err = t.say(ctx, map[string]string{"wait-for-cancel": "waiting", "block": "blocking"}[text])
		if err == nil {
			<-ctx.Done()
		}
	case "ask-then-cancel":
		err = t.askThenCancel(ctx)
	case "background":
		err = t.background(ctx)
	default:
		return nil, fmt.Errorf("%w: no scripted turn %q", acp.ErrInvalidParams, text)
	}
	switch {
	case reqCtx.Err() != nil:
		// The client cancelled the request itself: -32800.
		return nil, reqCtx.Err()
	case ctx.Err() != nil:
		return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case err != nil:
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// turn sends one session's updates and requests.
type turn struct {
	conn *acp.AgentConn
	sid  acp.SessionID
}

func (t turn) update(ctx context.Context, u acp.SessionUpdate) error {
	return t.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: t.sid, Update: u})
}

func (t turn) say(ctx context.Context, text string) error {
	return t.update(ctx, &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}})
}

// hello streams one of most kinds of update, asks permission, reads a file
// with line and limit, and writes one.
func (t turn) hello(ctx context.Context, cwd string) error {
	notes, out := filepath.Join(cwd, "notes.txt"), filepath.Join(cwd, "out.txt")
	msgID := acp.MessageID("msg-1")
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	updates := []acp.SessionUpdate{
		&acp.UserMessageChunk{Content: &acp.TextContent{Text: "hello"}},
		&acp.AgentThoughtChunk{Content: &acp.TextContent{Text: "thinking"}},
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "Hello "}, MessageID: &msgID},
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "from Go"}, MessageID: &msgID},
		&acp.Plan{Entries: []acp.PlanEntry{
			{Content: "read the notes", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusInProgress},
			{Content: "write out.txt", Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending},
		}},
		&acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{
			{Name: "run", Description: "run a command", Input: &acp.UnstructuredCommandInput{Hint: "a shell line"}},
		}},
		&acp.SessionInfoUpdate{Title: acp.Ptr("interop"), UpdatedAt: acp.Ptr("2026-01-01T00:00:00Z")},
		&acp.ToolCall{
			ToolCallID: "edit-1",
			Title:      "Edit the notes",
			Kind:       acp.ToolKindEdit,
			Status:     acp.ToolCallStatusPending,
			Locations:  []acp.ToolCallLocation{{Path: notes, Line: acp.Ptr(uint32(2))}},
			RawInput:   raw(map[string]string{"path": notes}),
			Content: []acp.ToolCallContent{
				acp.TextToolCallContent("about to edit"),
				&acp.Diff{Path: out, NewText: "new"},
			},
		},
	}
	for _, u := range updates {
		if err := t.update(ctx, u); err != nil {
			return err
		}
	}
	perm, err := t.conn.RequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: t.sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallID: "edit-1", Title: acp.Ptr("Edit the notes"), Kind: acp.Ptr(acp.ToolKindEdit), Status: acp.Ptr(acp.ToolCallStatusPending)},
		Options: []acp.PermissionOption{
			{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return err
	}
	sel, ok := perm.Outcome.(*acp.SelectedPermissionOutcome)
	if !ok || sel.OptionID != "allow" {
		return t.say(ctx, fmt.Sprintf("not allowed: %#v", perm.Outcome))
	}
	if err := t.update(ctx, &acp.ToolCallUpdate{ToolCallID: "edit-1", Status: acp.Ptr(acp.ToolCallStatusInProgress)}); err != nil {
		return err
	}
	// A client that serves no files (any v2 client: v2 has no fs/*) is
	// not asked to.
	read := &acp.ReadTextFileResponse{}
	if fs := t.conn.ClientCapabilities().FS; fs != nil && fs.ReadTextFile && fs.WriteTextFile {
		if read, err = t.conn.ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: t.sid, Path: notes, Line: acp.Ptr(uint32(2)), Limit: acp.Ptr(uint32(2))}); err != nil {
			return err
		}
		if _, err := t.conn.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: t.sid, Path: out, Content: "written by Go: " + read.Content}); err != nil {
			return err
		}
	}
	for _, u := range []acp.SessionUpdate{
		&acp.ToolCallUpdate{
			ToolCallID: "edit-1",
			Status:     acp.Ptr(acp.ToolCallStatusCompleted),
			Content:    []acp.ToolCallContent{acp.TextToolCallContent("done")},
			RawOutput:  raw(map[string]int{"bytes": len(read.Content)}),
		},
		&acp.UsageUpdate{Used: 10, Size: 100, Cost: &acp.Cost{Amount: 0.01, Currency: "USD"}},
	} {
		if err := t.update(ctx, u); err != nil {
			return err
		}
	}
	summary, _ := json.Marshal(map[string]string{"permission": string(sel.OptionID), "read": read.Content})
	return t.say(ctx, string(summary))
}

// askThenCancel asks permission and waits; the client cancels the turn
// (session/cancel) instead of answering, which cancels ctx and with it the
// request ($/cancel_request).
func (t turn) askThenCancel(ctx context.Context) error {
	call := acp.ToolCallUpdate{ToolCallID: "ask-then-cancel", Title: acp.Ptr("Wait for an answer"), Kind: acp.Ptr(acp.ToolKindOther)}
	if err := t.update(ctx, &acp.ToolCall{ToolCallID: call.ToolCallID, Title: *call.Title, Kind: *call.Kind, Status: acp.ToolCallStatusPending}); err != nil {
		return err
	}
	_, err := t.conn.RequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: t.sid,
		ToolCall:  call,
		Options:   []acp.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
	})
	if ctx.Err() == nil {
		return fmt.Errorf("permission answered although the turn was not cancelled (err %v)", err)
	}
	return nil
}

// background shows a terminal that keeps running after the turn, which the
// client may cancel (v2: terminal/cancel; in v1 the registration does
// nothing and the terminal runs until the connection ends). Its exit is
// reported when it is stopped.
func (t turn) background(ctx context.Context) error {
	const id = acp.TerminalID("go-term-1")
	stop := make(chan struct{})
	var once sync.Once
	if err := t.conn.CancellableTerminal(ctx, t.sid, id, func() { once.Do(func() { close(stop) }) }); err != nil {
		return err
	}
	started, err := (&acp.V2TerminalUpdate{TerminalID: id, Command: acp.Ptr("sleep 1000")}).SessionUpdate()
	if err != nil {
		return err
	}
	if err := t.update(ctx, started); err != nil {
		return err
	}
	// The "process" outlives the turn; it ends when stopped, or with the
	// connection (and with it this agent process).
	go func() {
		select {
		case <-stop:
		case <-t.conn.Done():
			return
		}
		exited, err := (&acp.V2TerminalUpdate{TerminalID: id, ExitStatus: &acp.V2TerminalExitStatus{Signal: acp.Ptr("SIGTERM")}}).SessionUpdate()
		if err == nil {
			_ = t.conn.SessionUpdate(context.Background(), &acp.SessionNotification{SessionID: t.sid, Update: exited})
		}
	}()
	return t.say(ctx, "started")
}
