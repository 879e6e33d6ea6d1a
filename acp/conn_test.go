package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if runAsTestAgent() {
		return
	}
	goleak.VerifyTestMain(m)
}

// recorder notes which methods a peer served.
type recorder struct {
	mu      sync.Mutex
	seen    map[string]bool
	barrier chan struct{} // receives when the "_acpterm/barrier" notification is handled
}

func (r *recorder) note(method string) {
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[method] = true
	r.mu.Unlock()
	// Notifications are handled in order, so once this one is, every
	// notification sent before it has been too.
	if method == "_acpterm/barrier" && r.barrier != nil {
		r.barrier <- struct{}{}
	}
}

func (r *recorder) methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for m := range r.seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// fullAgent implements Agent and every optional agent interface.
type fullAgent struct{ recorder }

func (a *fullAgent) Initialize(_ context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	a.note(MethodInitialize)
	return &InitializeResponse{ProtocolVersion: req.ProtocolVersion, AgentInfo: &Implementation{Name: "full", Version: "1"}}, nil
}
func (a *fullAgent) NewSession(_ context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	a.note(MethodSessionNew)
	return &NewSessionResponse{SessionID: "s1"}, nil
}
func (a *fullAgent) Prompt(_ context.Context, req *PromptRequest) (*PromptResponse, error) {
	a.note(MethodSessionPrompt)
	return &PromptResponse{StopReason: StopReasonEndTurn}, nil
}
func (a *fullAgent) Cancel(_ context.Context, n *CancelNotification) error {
	a.note(MethodSessionCancel)
	return nil
}
func (a *fullAgent) Authenticate(context.Context, *AuthenticateRequest) (*AuthenticateResponse, error) {
	a.note(MethodAuthenticate)
	return nil, nil
}
func (a *fullAgent) Logout(context.Context, *LogoutRequest) (*LogoutResponse, error) {
	a.note(MethodLogout)
	return nil, nil
}
func (a *fullAgent) LoadSession(context.Context, *LoadSessionRequest) (*LoadSessionResponse, error) {
	a.note(MethodSessionLoad)
	return nil, nil
}
func (a *fullAgent) ResumeSession(context.Context, *ResumeSessionRequest) (*ResumeSessionResponse, error) {
	a.note(MethodSessionResume)
	return nil, nil
}
func (a *fullAgent) ListSessions(context.Context, *ListSessionsRequest) (*ListSessionsResponse, error) {
	a.note(MethodSessionList)
	return &ListSessionsResponse{Sessions: []SessionInfo{{SessionID: "s1", Cwd: "/w"}}}, nil
}
func (a *fullAgent) CloseSession(context.Context, *CloseSessionRequest) (*CloseSessionResponse, error) {
	a.note(MethodSessionClose)
	return nil, nil
}
func (a *fullAgent) DeleteSession(context.Context, *DeleteSessionRequest) (*DeleteSessionResponse, error) {
	a.note(MethodSessionDelete)
	return nil, nil
}
func (a *fullAgent) SetSessionMode(context.Context, *SetSessionModeRequest) (*SetSessionModeResponse, error) {
	a.note(MethodSessionSetMode)
	return nil, nil
}
func (a *fullAgent) SetSessionConfigOption(context.Context, *SetSessionConfigOptionRequest) (*SetSessionConfigOptionResponse, error) {
	a.note(MethodSessionSetConfigOption)
	return &SetSessionConfigOptionResponse{}, nil
}
func (a *fullAgent) ExtMethod(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a.note(method)
	return params, nil
}
func (a *fullAgent) ExtNotification(_ context.Context, method string, _ json.RawMessage) error {
	a.note(method)
	return nil
}

// fullClient implements Client and every optional client interface.
type fullClient struct {
	recorder
	updates chan *SessionNotification
}

func (c *fullClient) RequestPermission(_ context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	c.note(MethodSessionRequestPermission)
	return &RequestPermissionResponse{Outcome: &SelectedPermissionOutcome{OptionID: req.Options[0].OptionID}}, nil
}
func (c *fullClient) SessionUpdate(_ context.Context, n *SessionNotification) error {
	c.note(MethodSessionUpdate)
	if c.updates != nil {
		c.updates <- n
	}
	return nil
}
func (c *fullClient) CreateTerminal(_ context.Context, req *CreateTerminalRequest) (*CreateTerminalResponse, error) {
	c.note(MethodTerminalCreate)
	return &CreateTerminalResponse{TerminalID: "t1"}, nil
}
func (c *fullClient) TerminalOutput(context.Context, *TerminalOutputRequest) (*TerminalOutputResponse, error) {
	c.note(MethodTerminalOutput)
	return &TerminalOutputResponse{Output: "hi\n"}, nil
}
func (c *fullClient) WaitForTerminalExit(context.Context, *WaitForTerminalExitRequest) (*WaitForTerminalExitResponse, error) {
	c.note(MethodTerminalWaitForExit)
	zero := uint32(0)
	return &WaitForTerminalExitResponse{ExitCode: &zero}, nil
}
func (c *fullClient) KillTerminal(context.Context, *KillTerminalRequest) (*KillTerminalResponse, error) {
	c.note(MethodTerminalKill)
	return nil, nil
}
func (c *fullClient) ReleaseTerminal(context.Context, *ReleaseTerminalRequest) (*ReleaseTerminalResponse, error) {
	c.note(MethodTerminalRelease)
	return nil, nil
}
func (c *fullClient) ReadTextFile(context.Context, *ReadTextFileRequest) (*ReadTextFileResponse, error) {
	c.note(MethodFSReadTextFile)
	return &ReadTextFileResponse{Content: "text"}, nil
}
func (c *fullClient) WriteTextFile(context.Context, *WriteTextFileRequest) (*WriteTextFileResponse, error) {
	c.note(MethodFSWriteTextFile)
	return nil, nil
}
func (c *fullClient) CreateElicitation(context.Context, *CreateElicitationRequest) (*CreateElicitationResponse, error) {
	c.note(MethodElicitationCreate)
	return &CreateElicitationResponse{Action: &ElicitationDeclineAction{}}, nil
}
func (c *fullClient) CompleteElicitation(_ context.Context, n *CompleteElicitationNotification) error {
	c.note(MethodElicitationComplete)
	if c.updates != nil {
		c.updates <- nil
	}
	return nil
}
func (c *fullClient) ExtMethod(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c.note(method)
	return params, nil
}
func (c *fullClient) ExtNotification(_ context.Context, method string, _ json.RawMessage) error {
	c.note(method)
	return nil
}

// pair connects a client and an agent over in-memory pipes.
func pair(t testing.TB, agent Agent, client Client) (*ClientConn, *AgentConn) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := NewAgentConn(agent, toAgentR, toClientW, nil)
	cc := NewClientConn(client, toClientR, toAgentW, nil)
	t.Cleanup(func() {
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	})
	return cc, ac
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// methodsOf lists the table's methods handled by side, extensions excluded.
func methodsOf(side Side) []string {
	var out []string
	for m := range Methods() {
		if m.Side == side {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestEveryAgentMethod(t *testing.T) {
	agent := &fullAgent{recorder{barrier: make(chan struct{}, 1)}}
	cc, _ := pair(t, agent, &fullClient{})
	ctx := context.Background()

	init, err := cc.Initialize(ctx, nil)
	mustOK(t, "initialize", err)
	if init.ProtocolVersion != ProtocolVersion1 || init.AgentInfo == nil || init.AgentInfo.Name != "full" {
		t.Fatalf("initialize result = %+v", init)
	}
	caps := init.AgentCapabilities
	if caps == nil || !caps.LoadSession || caps.SessionCapabilities == nil || caps.SessionCapabilities.List == nil ||
		caps.SessionCapabilities.Resume == nil || caps.SessionCapabilities.Close == nil ||
		caps.SessionCapabilities.Delete == nil || caps.Auth == nil || caps.Auth.Logout == nil {
		t.Fatalf("capabilities not inferred from the agent's interfaces: %+v", caps)
	}
	_, err = cc.Authenticate(ctx, &AuthenticateRequest{MethodID: "key"})
	mustOK(t, "authenticate", err)
	_, err = cc.Logout(ctx, &LogoutRequest{})
	mustOK(t, "logout", err)
	ns, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/w", MCPServers: []MCPServer{}})
	mustOK(t, "session/new", err)
	if ns.SessionID != "s1" {
		t.Fatalf("session id = %q", ns.SessionID)
	}
	_, err = cc.LoadSession(ctx, &LoadSessionRequest{SessionID: "s1", Cwd: "/w", MCPServers: []MCPServer{}})
	mustOK(t, "session/load", err)
	_, err = cc.ResumeSession(ctx, &ResumeSessionRequest{SessionID: "s1", Cwd: "/w"})
	mustOK(t, "session/resume", err)
	ls, err := cc.ListSessions(ctx, &ListSessionsRequest{})
	mustOK(t, "session/list", err)
	if len(ls.Sessions) != 1 || ls.Sessions[0].SessionID != "s1" {
		t.Fatalf("session/list = %+v", ls)
	}
	_, err = cc.CloseSession(ctx, &CloseSessionRequest{SessionID: "s1"})
	mustOK(t, "session/close", err)
	_, err = cc.DeleteSession(ctx, &DeleteSessionRequest{SessionID: "s1"})
	mustOK(t, "session/delete", err)
	_, err = cc.SetSessionMode(ctx, &SetSessionModeRequest{SessionID: "s1", ModeID: "ask"})
	mustOK(t, "session/set_mode", err)
	_, err = cc.SetSessionConfigOption(ctx, &SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "model", Value: &SessionConfigSelectValue{Value: "fast"}})
	mustOK(t, "session/set_config_option", err)
	pr, err := cc.Prompt(ctx, &PromptRequest{SessionID: "s1", Prompt: []ContentBlock{&TextContent{Text: "hi"}}})
	mustOK(t, "session/prompt", err)
	if pr.StopReason != StopReasonEndTurn {
		t.Fatalf("stop reason = %q", pr.StopReason)
	}
	mustOK(t, "session/cancel", cc.Cancel(ctx, &CancelNotification{SessionID: "s1"}))
	raw, err := cc.ExtMethod(ctx, "_acpterm/echo", map[string]int{"n": 1})
	mustOK(t, "ext method", err)
	if string(raw) != `{"n":1}` {
		t.Fatalf("ext echo = %s", raw)
	}
	mustOK(t, "ext notification", cc.ExtNotification(ctx, "_acpterm/note", nil))
	mustOK(t, "barrier", cc.ExtNotification(ctx, "_acpterm/barrier", nil))
	<-agent.barrier

	want := append(methodsOf(SideAgent), "_acpterm/barrier", "_acpterm/echo", "_acpterm/note")
	sort.Strings(want)
	if got := agent.methods(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("agent served\n  %v\nwant\n  %v", got, want)
	}
}

func TestEveryClientMethod(t *testing.T) {
	client := &fullClient{recorder: recorder{barrier: make(chan struct{}, 1)}, updates: make(chan *SessionNotification, 4)}
	cc, ac := pair(t, &fullAgent{}, client)
	ctx := context.Background()

	_, err := cc.Initialize(ctx, nil)
	mustOK(t, "initialize", err)
	caps := ac.ClientCapabilities()
	if !caps.Terminal || caps.FS == nil || !caps.FS.ReadTextFile || !caps.FS.WriteTextFile {
		t.Fatalf("client capabilities not inferred: %+v", caps)
	}

	mustOK(t, "session/update", ac.SessionUpdate(ctx, &SessionNotification{SessionID: "s1",
		Update: &AgentMessageChunk{Content: &TextContent{Text: "hello"}}}))
	n := <-client.updates
	if chunk, ok := n.Update.(*AgentMessageChunk); !ok || chunk.Content.(*TextContent).Text != "hello" {
		t.Fatalf("update = %#v", n.Update)
	}
	perm, err := ac.RequestPermission(ctx, &RequestPermissionRequest{SessionID: "s1",
		ToolCall: ToolCallUpdate{ToolCallID: "c1"},
		Options:  []PermissionOption{{OptionID: "yes", Name: "Yes", Kind: PermissionOptionKindAllowOnce}}})
	mustOK(t, "session/request_permission", err)
	if sel, ok := perm.Outcome.(*SelectedPermissionOutcome); !ok || sel.OptionID != "yes" {
		t.Fatalf("permission outcome = %#v", perm.Outcome)
	}
	rf, err := ac.ReadTextFile(ctx, &ReadTextFileRequest{SessionID: "s1", Path: "/w/a"})
	mustOK(t, "fs/read_text_file", err)
	if rf.Content != "text" {
		t.Fatalf("read = %q", rf.Content)
	}
	_, err = ac.WriteTextFile(ctx, &WriteTextFileRequest{SessionID: "s1", Path: "/w/a", Content: "x"})
	mustOK(t, "fs/write_text_file", err)
	el, err := ac.CreateElicitation(ctx, &CreateElicitationRequest{Message: "?",
		Mode: &ElicitationFormMode{Scope: &ElicitationSessionScope{SessionID: "s1"}}})
	mustOK(t, "elicitation/create", err)
	if _, ok := el.Action.(*ElicitationDeclineAction); !ok {
		t.Fatalf("elicitation action = %#v", el.Action)
	}
	mustOK(t, "elicitation/complete", ac.CompleteElicitation(ctx, &CompleteElicitationNotification{ElicitationID: "e1"}))
	<-client.updates

	term, err := ac.CreateTerminal(ctx, &CreateTerminalRequest{SessionID: "s1", Command: "true"})
	mustOK(t, "terminal/create", err)
	if term.ID != "t1" {
		t.Fatalf("terminal id = %q", term.ID)
	}
	out, err := term.Output(ctx)
	mustOK(t, "terminal/output", err)
	if out.Output != "hi\n" {
		t.Fatalf("output = %q", out.Output)
	}
	st, err := term.WaitForExit(ctx)
	mustOK(t, "terminal/wait_for_exit", err)
	if st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("exit = %+v", st)
	}
	mustOK(t, "terminal/kill", term.Kill(ctx))
	mustOK(t, "terminal/release", term.Release(ctx))
	for name, err := range map[string]error{
		"output": func() error { _, err := term.Output(ctx); return err }(),
		"wait":   func() error { _, err := term.WaitForExit(ctx); return err }(),
		"kill":   term.Kill(ctx),
		"again":  term.Release(ctx),
	} {
		if !errors.Is(err, ErrTerminalReleased) {
			t.Errorf("%s after release: %v, want ErrTerminalReleased", name, err)
		}
	}
	mustOK(t, "close after release", term.Close())

	_, err = ac.ExtMethod(ctx, "_acpterm/echo", nil)
	mustOK(t, "ext method", err)
	mustOK(t, "ext notification", ac.ExtNotification(ctx, "_acpterm/note", nil))
	mustOK(t, "barrier", ac.ExtNotification(ctx, "_acpterm/barrier", nil))
	<-client.barrier

	want := append(methodsOf(SideClient), "_acpterm/barrier", "_acpterm/echo", "_acpterm/note")
	sort.Strings(want)
	if got := client.methods(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("client served\n  %v\nwant\n  %v", got, want)
	}
}

// minimalAgent implements only the required Agent methods.
type minimalAgent struct{}

func (minimalAgent) Initialize(_ context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	return &InitializeResponse{}, nil
}
func (minimalAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	return &NewSessionResponse{SessionID: "s"}, nil
}
func (minimalAgent) Prompt(context.Context, *PromptRequest) (*PromptResponse, error) {
	return &PromptResponse{StopReason: StopReasonEndTurn}, nil
}
func (minimalAgent) Cancel(context.Context, *CancelNotification) error { return nil }

// minimalClient implements only the required Client methods.
type minimalClient struct{}

func (minimalClient) RequestPermission(context.Context, *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	return &RequestPermissionResponse{Outcome: &CancelledPermissionOutcome{}}, nil
}
func (minimalClient) SessionUpdate(context.Context, *SessionNotification) error { return nil }
