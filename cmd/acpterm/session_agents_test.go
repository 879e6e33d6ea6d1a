package main

// Scripted agents with the session shapes of real agents (ACP-NOTES §10):
// codex-acp's loadSession with a replay of the history, claude-agent-acp's
// sessionCapabilities.resume and list, an agent with neither, and one for
// interactive sessions with gemini's modes, an opencode-style model
// option, slash commands, a turn that waits for session/cancel, and a
// form (elicitation/create). Each appends the calls it gets to the file
// named by sessionLogEnv.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
)

// sessionLogEnv names the file the session agents log their calls to,
// one line each.
const sessionLogEnv = "ACPTERM_E2E_SESSION_LOG"

func init() {
	registerHostile("sess-load", func() int { return serveAgent(&historyAgent{}) })
	registerHostile("sess-resume", func() int { return serveAgent(&resumeAgent{}) })
	registerHostile("sess-bare", func() int { return serveAgent(&sessionAgent{sid: "sess_bare"}) })
	registerHostile("sess-chat", func() int { return serveAgent(newChatAgent()) })
}

// logCall appends one line to the session log.
func logCall(format string, args ...any) {
	path := os.Getenv(sessionLogEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// sessionAgent opens sid and answers each prompt with "answer to: TEXT".
type sessionAgent struct {
	baseAgent
	sid acp.SessionID
}

func (a *sessionAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	logCall("new")
	return &acp.NewSessionResponse{SessionID: a.sid}, nil
}

func (a *sessionAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	text := promptText(req)
	logCall("prompt:%s:%s", req.SessionID, text)
	err := a.say(ctx, req.SessionID, &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "answer to: " + text + "\n"}})
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}

func (a *sessionAgent) say(ctx context.Context, sid acp.SessionID, u acp.SessionUpdate) error {
	return a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid, Update: u})
}

func promptText(req *acp.PromptRequest) string {
	var b strings.Builder
	for _, c := range req.Prompt {
		if t, ok := c.(*acp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// historyAgent advertises loadSession (codex-acp) and replays a history
// with a user message, an answer and a tool call before it answers
// session/load.
type historyAgent struct{ sessionAgent }

func (a *historyAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.sid = "sess_hist_1"
	return a.sessionAgent.NewSession(ctx, req)
}

func (a *historyAgent) LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	logCall("load:%s:%s", req.SessionID, req.Cwd)
	done := acp.ToolCallStatusCompleted
	for _, u := range []acp.SessionUpdate{
		&acp.UserMessageChunk{Content: &acp.TextContent{Text: "earlier question\x1b[2J"}},
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "earlier answer\n"}},
		&acp.ToolCall{ToolCallID: "call_old", Title: "read notes.txt", Kind: acp.ToolKindRead, Status: done},
		&acp.UserMessageChunk{Content: &acp.TextContent{Text: "second question"}},
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "second answer\n"}},
	} {
		if err := a.say(ctx, req.SessionID, u); err != nil {
			return nil, err
		}
	}
	return &acp.LoadSessionResponse{}, nil
}

// resumeAgent advertises sessionCapabilities.resume and list
// (claude-agent-acp), not loadSession.
type resumeAgent struct{ sessionAgent }

func (a *resumeAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.sid = "sess_res_1"
	return a.sessionAgent.NewSession(ctx, req)
}

func (a *resumeAgent) ResumeSession(ctx context.Context, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error) {
	logCall("resume:%s:%s", req.SessionID, req.Cwd)
	return &acp.ResumeSessionResponse{}, nil
}

func (a *resumeAgent) ListSessions(ctx context.Context, req *acp.ListSessionsRequest) (*acp.ListSessionsResponse, error) {
	logCall("list")
	str := func(s string) *string { return &s }
	// Two pages, as an agent with many sessions sends them.
	if req.Cursor == nil {
		return &acp.ListSessionsResponse{Sessions: []acp.SessionInfo{
			{SessionID: "sess_res_1", Cwd: "/somewhere", Title: str("from the agent")},
		}, NextCursor: str("page2")}, nil
	}
	return &acp.ListSessionsResponse{Sessions: []acp.SessionInfo{
		{SessionID: "sess_agent_only", Cwd: "/elsewhere", Title: str("made in an editor\x1b]0;pwned\x07"), UpdatedAt: str("2026-01-02T03:04:05Z")},
	}}, nil
}

// chatAgent is for interactive sessions: gemini's modes, a model option,
// slash commands sent right after session/new, a "slow" turn that runs
// until session/cancel, and a "form" turn that asks for a form.
type chatAgent struct {
	sessionAgent
	mu        sync.Mutex
	mode      acp.SessionModeID
	model     acp.SessionConfigValueID
	cancelled chan struct{}
}

func newChatAgent() *chatAgent {
	return &chatAgent{sessionAgent: sessionAgent{sid: "sess_chat"}, mode: "default", model: "opencode/big-pickle"}
}

func (a *chatAgent) options() []acp.SessionConfigOption {
	cat := acp.SessionConfigOptionCategoryModel
	return []acp.SessionConfigOption{{ID: "model", Name: "Model", Category: &cat, Kind: &acp.SessionConfigSelect{
		CurrentValue: a.model,
		Options: acp.SessionConfigSelectOptionList{
			{Value: "opencode/big-pickle", Name: "Big Pickle"}, {Value: "opencode/grok-code", Name: "Grok Code"},
		},
	}}}
}

func (a *chatAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	logCall("new")
	err := a.say(ctx, a.sid, &acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{
		{Name: "memory", Description: "Manage memory"},
		{Name: "review", Description: "Review changes\x1b[31m", Input: &acp.UnstructuredCommandInput{Hint: "FILES"}},
	}})
	a.mu.Lock()
	defer a.mu.Unlock()
	return &acp.NewSessionResponse{SessionID: a.sid, ConfigOptions: a.options(), Modes: &acp.SessionModeState{
		CurrentModeID:  a.mode,
		AvailableModes: []acp.SessionMode{{ID: "default", Name: "Default"}, {ID: "yolo", Name: "YOLO"}, {ID: "plan", Name: "Plan"}},
	}}, err
}

func (a *chatAgent) SetSessionMode(ctx context.Context, req *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	logCall("set_mode:%s:%s", req.SessionID, req.ModeID)
	a.mu.Lock()
	a.mode = req.ModeID
	a.mu.Unlock()
	return &acp.SetSessionModeResponse{}, nil
}

func (a *chatAgent) SetSessionConfigOption(ctx context.Context, req *acp.SetSessionConfigOptionRequest) (*acp.SetSessionConfigOptionResponse, error) {
	v, ok := req.Value.(*acp.SessionConfigSelectValue)
	if !ok {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "not a select value"}
	}
	logCall("set:%s:%s=%s", req.SessionID, req.ConfigID, v.Value)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.model = v.Value
	return &acp.SetSessionConfigOptionResponse{ConfigOptions: a.options()}, nil
}

func (a *chatAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error {
	logCall("cancel:%s", n.SessionID)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancelled != nil {
		close(a.cancelled)
		a.cancelled = nil
	}
	return nil
}

func (a *chatAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	switch text := promptText(req); text {
	case "slow":
		logCall("prompt:%s:%s", req.SessionID, text)
		cancelled := make(chan struct{})
		a.mu.Lock()
		a.cancelled = cancelled
		a.mu.Unlock()
		if err := a.say(ctx, req.SessionID, &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "working on it\n"}}); err != nil {
			return nil, err
		}
		select {
		case <-cancelled:
			return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "form":
		logCall("prompt:%s:%s", req.SessionID, text)
		return a.form(ctx, req.SessionID)
	}
	return a.sessionAgent.Prompt(ctx, req)
}

// form asks for a name, an age, a yes/no and a colour, and says what it
// got.
func (a *chatAgent) form(ctx context.Context, sid acp.SessionID) (*acp.PromptResponse, error) {
	str := func(s string) *string { return &s }
	lo, hi := int64(0), int64(150)
	resp, err := a.conn.Load().CreateElicitation(ctx, &acp.CreateElicitationRequest{
		Message: "Tell me about you\x1b[2J",
		Mode: &acp.ElicitationFormMode{Scope: &acp.ElicitationSessionScope{SessionID: sid}, RequestedSchema: acp.ElicitationSchema{
			Type: "object",
			Properties: map[string]acp.ElicitationPropertySchema{
				"name":  &acp.StringPropertySchema{Title: str("Your name"), MinLength: new(uint32(2))},
				"age":   &acp.IntegerPropertySchema{Minimum: &lo, Maximum: &hi},
				"ok":    &acp.BooleanPropertySchema{Description: str("Proceed?")},
				"color": &acp.StringPropertySchema{OneOf: []acp.EnumOption{{Const: "red", Title: "Red"}, {Const: "green", Title: "Green"}}},
			},
			Required: []string{"name", "age", "ok", "color"},
		}},
	})
	var got string
	switch {
	case err != nil:
		got = "error: " + err.Error()
	default:
		switch act := resp.Action.(type) {
		case *acp.ElicitationAcceptAction:
			got = fmt.Sprintf("accepted name=%v age=%v ok=%v color=%v", act.Content["name"], act.Content["age"], act.Content["ok"], act.Content["color"])
		case *acp.ElicitationDeclineAction:
			got = "declined"
		case *acp.ElicitationCancelAction:
			got = "cancelled"
		}
	}
	logCall("form:%s", got)
	err = a.say(ctx, sid, &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "form " + got + "\n"}})
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}
