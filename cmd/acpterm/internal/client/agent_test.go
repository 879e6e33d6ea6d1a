package client

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
)

// fakeAgentEnv names the mode in which the test binary, re-executed, is a
// small scripted ACP agent on its stdin and stdout.
const fakeAgentEnv = "ACPTERM_CLIENT_FAKE_AGENT"

func fakeAgent(mode string) int {
	a := &fake{mode: mode}
	conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, nil)
	a.conn.Store(conn)
	<-conn.Done()
	conn.Close()
	return 0
}

type fake struct {
	mode string
	// conn is set after the connection starts serving: atomic, since a
	// handler may already be running.
	conn atomic.Pointer[acp.AgentConn]

	mu     sync.Mutex
	cancel context.CancelFunc
}

func (a *fake) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *fake) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_fake"}, nil
}

func (a *fake) Cancel(ctx context.Context, n *acp.CancelNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		a.cancel()
	}
	return nil
}

func (a *fake) say(sid acp.SessionID, format string, args ...any) {
	_ = a.conn.Load().SessionUpdate(context.Background(), &acp.SessionNotification{
		SessionID: sid,
		Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: fmt.Sprintf(format, args...) + "\n"}},
	})
}

func (a *fake) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.cancel = cancel
	a.mu.Unlock()
	var text string
	for _, b := range req.Prompt {
		if t, ok := b.(*acp.TextContent); ok {
			text += t.Text
		}
	}
	sid := req.SessionID
	switch {
	case a.mode == "perm":
		title, kind := "touch the thing", acp.ToolKindEdit
		// Not on ctx: the client's answer to a cancelled turn is the point.
		resp, err := a.conn.Load().RequestPermission(context.WithoutCancel(ctx), &acp.RequestPermissionRequest{
			SessionID: sid,
			ToolCall:  acp.ToolCallUpdate{ToolCallID: "call_1", Title: &title, Kind: &kind},
			Options: []acp.PermissionOption{
				{OptionID: "yes-once", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionID: "yes-always", Name: "Always", Kind: acp.PermissionOptionKindAllowAlways},
				{OptionID: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		switch {
		case err != nil:
			a.say(sid, "permission error: %v", err)
		case resp.Outcome == nil:
			a.say(sid, "outcome: none")
		default:
			switch o := resp.Outcome.(type) {
			case *acp.SelectedPermissionOutcome:
				a.say(sid, "outcome: selected %s", o.OptionID)
			case *acp.CancelledPermissionOutcome:
				a.say(sid, "outcome: cancelled")
			}
		}
	case a.mode == "fs":
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "read":
				r := &acp.ReadTextFileRequest{SessionID: sid, Path: f[1]}
				if len(f) == 4 {
					l, _ := strconv.Atoi(f[2])
					n, _ := strconv.Atoi(f[3])
					r.Line, r.Limit = ptr(uint32(l)), ptr(uint32(n))
				}
				resp, err := a.conn.Load().ReadTextFile(ctx, r)
				if err != nil {
					a.say(sid, "read error %d: %v", acp.ErrorCode(err), err)
				} else {
					a.say(sid, "read ok: %q", resp.Content)
				}
			case len(f) == 3 && f[0] == "write":
				_, err := a.conn.Load().WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: sid, Path: f[1], Content: f[2]})
				if err != nil {
					a.say(sid, "write error %d: %v", acp.ErrorCode(err), err)
				} else {
					a.say(sid, "write ok")
				}
			}
		}
	case strings.HasPrefix(a.mode, "stop:"):
		return &acp.PromptResponse{StopReason: acp.StopReason(strings.TrimPrefix(a.mode, "stop:"))}, nil
	case a.mode == "input":
		a.typeInto(ctx, sid)
	case a.mode == "chatty":
		a.say(sid, "chatty says hello")
		<-ctx.Done()
	case a.mode == "garbage-turn":
		for range 10 {
			_, _ = os.Stdout.WriteString("this is not JSON\n")
		}
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
