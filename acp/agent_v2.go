package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// A Go Agent is written once, against the v1 types, and AgentConn serves
// it to v1 and v2 clients alike. In v2 it translates:
//
//   - session/prompt is acknowledged at once (a new message id) after a
//     running state update; the Agent's Prompt runs on the connection's
//     own goroutine, and when it returns, the idle state update carries
//     its stop reason (an error: stop reason "error" with the error as
//     WireError gives it; a turn the client ended: "cancelled");
//   - the Agent's session updates go out in v2's words: chunks without a
//     message id get one per turn and kind, a tool_call becomes a
//     tool_call_update (v2's upsert), a plan a plan_update of the
//     session's one plan ("plan"), current_mode_update (no v2 form) is
//     dropped; a permission request is preceded
//     by a requires_action state update and followed by running;
//   - every state update lists the session's background work: the
//     terminals announced with terminal_update that have not reported an
//     exit status, and the tool calls registered with
//     CancellableToolCall that have not reached a final status; when one
//     ends outside a turn, an idle state update with the new list follows;
//   - a terminal registered with CancellableTerminal advertises
//     capabilities.cancel until its exit status, and terminal/cancel calls
//     its stop function (tool_call/cancel likewise);
//   - session/resume with replayFrom start replays through the Agent's
//     LoadSession (SessionLoader), which sends the history as updates;
//     either way a state update follows before the answer;
//   - auth/login and auth/logout reach Authenticate and Logout; the
//     baseline methods an Agent lacks are answered for it (session/list
//     with no sessions, session/close by cancelling the session's turns).
//
// What v2 lacks fails: CreateTerminal (the client advertises no
// terminals), ReadTextFile, WriteTextFile and the terminal calls return
// ErrNotInVersion.

// agentV2 is a v2 AgentConn's state of its sessions and turns.
type agentV2 struct {
	once    sync.Once
	life    context.Context // ends when the connection does: the turns' base
	endLife context.CancelFunc
	wg      sync.WaitGroup // the turns and the watch of the connection
	nextID  atomic.Uint64

	mu       sync.Mutex
	sessions map[SessionID]*agentSessionV2
}

// agentSessionV2 is what AgentConn tracks of one v2 session.
type agentSessionV2 struct {
	msgIDs    map[string]MessageID // per chunk kind: the current message's id
	inTurn    int                  // turns running
	terminals []*agentItem         // announced and not exited, in order
	toolCalls []*agentItem         // registered cancellable and not final
}

// agentItem is a terminal or tool call of a session.
type agentItem struct {
	id         string
	stop       func() // nil: not cancellable
	advertised bool   // capabilities.cancel has been sent
}

// start makes the connection's lifetime context, once.
func (v *agentV2) start(a *AgentConn) context.Context {
	v.once.Do(func() {
		v.life, v.endLife = context.WithCancel(context.Background())
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			select {
			case <-a.Done():
			case <-v.life.Done():
			}
			v.endLife()
		}()
	})
	return v.life
}

// stop ends the turns and waits for them.
func (v *agentV2) stop() {
	v.once.Do(func() {}) // no start after this
	if v.endLife != nil {
		v.endLife()
	}
	v.wg.Wait()
}

func (v *agentV2) session(sid SessionID) *agentSessionV2 {
	if v.sessions == nil {
		v.sessions = map[SessionID]*agentSessionV2{}
	}
	s := v.sessions[sid]
	if s == nil {
		s = &agentSessionV2{msgIDs: map[string]MessageID{}}
		v.sessions[sid] = s
	}
	return s
}

// forget drops what is tracked of a closed session, unless a turn of it
// still runs (it will end cancelled, and its state update needs the list).
func (v *agentV2) forget(sid SessionID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.sessions[sid]; s != nil && s.inTurn == 0 {
		delete(v.sessions, sid)
	}
}

// handleV2 serves the requests of a connection that negotiated v2.
func (a *AgentConn) handleV2(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case MethodSessionNew:
		return serve(ctx, req, a.newSessionV2)
	case MethodSessionPrompt:
		return a.promptV2(ctx, req)
	case MethodSessionCancel:
		return a.cancel(ctx, req) // the same params in both versions
	case MethodSessionResume:
		return serve(ctx, req, func(ctx context.Context, r *V2ResumeSessionRequest) (*V2ResumeSessionResponse, error) {
			return a.resumeV2(ctx, r, req.Seq)
		})
	case MethodSessionList:
		return serve(ctx, req, a.listSessionsV2)
	case MethodSessionClose:
		if h, ok := a.agent.(SessionCloser); ok {
			closeSession := a.closeSession(h, req.Seq)
			return serve(ctx, req, func(ctx context.Context, r *CloseSessionRequest) (*CloseSessionResponse, error) {
				defer a.v2.forget(r.SessionID)
				return closeSession(ctx, r)
			})
		}
		return serve(ctx, req, func(ctx context.Context, r *CloseSessionRequest) (*CloseSessionResponse, error) {
			a.turns.cancelSession(r.SessionID, req.Seq, errSessionClosed)
			a.v2.forget(r.SessionID)
			return &CloseSessionResponse{}, nil
		})
	case MethodSessionDelete:
		if h, ok := a.agent.(SessionDeleter); ok {
			return serve(ctx, req, h.DeleteSession)
		}
	case MethodSessionSetConfigOption:
		if h, ok := a.agent.(ConfigOptionSetter); ok {
			return serve(ctx, req, func(ctx context.Context, r *V2SetSessionConfigOptionRequest) (*V2SetSessionConfigOptionResponse, error) {
				return a.setConfigOptionV2(ctx, h, req.Params)
			})
		}
	case MethodAuthLogin:
		if h, ok := a.agent.(Authenticator); ok {
			return serve(ctx, req, func(ctx context.Context, r *V2LoginAuthRequest) (*V2LoginAuthResponse, error) {
				resp, err := h.Authenticate(ctx, &AuthenticateRequest{MethodID: r.MethodID, Meta: r.Meta})
				if err != nil || resp == nil {
					return nil, err
				}
				return &V2LoginAuthResponse{Meta: resp.Meta}, nil
			})
		}
	case MethodAuthLogout:
		if h, ok := a.agent.(LogoutHandler); ok {
			return serve(ctx, req, func(ctx context.Context, r *V2LogoutAuthRequest) (*V2LogoutAuthResponse, error) {
				resp, err := h.Logout(ctx, &LogoutRequest{Meta: r.Meta})
				if err != nil || resp == nil {
					return nil, err
				}
				return &V2LogoutAuthResponse{Meta: resp.Meta}, nil
			})
		}
	case MethodTerminalCancel:
		return serve(ctx, req, a.cancelTerminalV2)
	case MethodToolCallCancel:
		return serve(ctx, req, a.cancelToolCallV2)
	default:
		return serveExt(ctx, a.agent, req)
	}
	return nil, unsupported(req.Method)
}

func (a *AgentConn) newSessionV2(ctx context.Context, r *V2NewSessionRequest) (*V2NewSessionResponse, error) {
	v1 := &NewSessionRequest{Cwd: string(r.Cwd), Meta: r.Meta}
	for _, d := range r.AdditionalDirectories {
		v1.AdditionalDirectories = append(v1.AdditionalDirectories, string(d))
	}
	var err error
	if v1.MCPServers, err = v1MCPServers(r.MCPServers); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	resp, err := a.agent.NewSession(ctx, v1)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("%w: the agent created no session", ErrInternal)
	}
	out := &V2NewSessionResponse{SessionID: resp.SessionID, Meta: resp.Meta}
	_ = convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v1ConfigIDKey, v2ConfigIDKey)
	return out, nil
}

func (a *AgentConn) listSessionsV2(ctx context.Context, r *V2ListSessionsRequest) (*V2ListSessionsResponse, error) {
	h, ok := a.agent.(SessionLister)
	if !ok {
		return &V2ListSessionsResponse{Sessions: []V2SessionInfo{}}, nil // the baseline, with nothing to list
	}
	v1 := new(ListSessionsRequest)
	if err := convert(v1, r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	resp, err := h.ListSessions(ctx, v1)
	if err != nil || resp == nil {
		return &V2ListSessionsResponse{Sessions: []V2SessionInfo{}}, err
	}
	out := new(V2ListSessionsResponse)
	return out, convert(out, resp)
}

func (a *AgentConn) setConfigOptionV2(ctx context.Context, h ConfigOptionSetter, raw json.RawMessage) (*V2SetSessionConfigOptionResponse, error) {
	// v2 tags a value id "id"; v1 leaves it untagged.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	if string(m["type"]) == `"id"` {
		delete(m, "type")
	}
	b, _ := json.Marshal(m)
	v1 := new(SetSessionConfigOptionRequest)
	if err := json.Unmarshal(b, v1); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	resp, err := h.SetSessionConfigOption(ctx, v1)
	if err != nil || resp == nil {
		return nil, err
	}
	out := &V2SetSessionConfigOptionResponse{Meta: resp.Meta}
	return out, convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v1ConfigIDKey, v2ConfigIDKey)
}

// resumeV2 serves session/resume: a replay from the start goes through the
// Agent's LoadSession, a resume without one through its ResumeSession;
// then the session's state, before the answer.
func (a *AgentConn) resumeV2(ctx context.Context, r *V2ResumeSessionRequest, seq uint64) (*V2ResumeSessionResponse, error) {
	mcp, err := v1MCPServers(r.MCPServers)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	dirs := make([]string, len(r.AdditionalDirectories))
	for i, d := range r.AdditionalDirectories {
		dirs[i] = string(d)
	}
	out := &V2ResumeSessionResponse{}
	switch r.ReplayFrom.(type) {
	case nil:
		h, ok := a.agent.(SessionResumer)
		if !ok {
			return nil, fmt.Errorf("%w: this agent cannot resume session %q", ErrInvalidParams, r.SessionID)
		}
		resp, err := h.ResumeSession(ctx, &ResumeSessionRequest{SessionID: r.SessionID, Cwd: string(r.Cwd), AdditionalDirectories: dirs, MCPServers: mcp, Meta: r.Meta})
		if err != nil {
			return nil, err
		}
		if resp != nil {
			out.Meta = resp.Meta
			_ = convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v1ConfigIDKey, v2ConfigIDKey)
		}
	case *V2ReplayFromStart:
		h, ok := a.agent.(SessionLoader)
		if !ok {
			return nil, fmt.Errorf("%w: this agent cannot replay session %q", ErrInvalidParams, r.SessionID)
		}
		resp, err := h.LoadSession(ctx, &LoadSessionRequest{SessionID: r.SessionID, Cwd: string(r.Cwd), AdditionalDirectories: dirs, MCPServers: mcp, Meta: r.Meta})
		if err != nil {
			return nil, err
		}
		if resp != nil {
			out.Meta = resp.Meta
			_ = convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v1ConfigIDKey, v2ConfigIDKey)
		}
	default:
		return nil, fmt.Errorf("%w: unsupported replayFrom cursor", ErrInvalidParams)
	}
	var st V2State = &V2IdleStateUpdate{}
	a.v2.mu.Lock()
	if a.v2.session(r.SessionID).inTurn > 0 {
		st = &V2RunningStateUpdate{}
	}
	a.v2.mu.Unlock()
	if err := a.sendState(ctx, r.SessionID, st); err != nil {
		return nil, err
	}
	return out, nil
}

// promptV2 serves a v2 session/prompt: running, the acknowledgement, and
// the Agent's Prompt on a goroutine of the connection's, whose end is the
// idle state update.
func (a *AgentConn) promptV2(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	p2 := new(V2PromptRequest)
	if err := decodeParams(req.Params, p2); err != nil {
		return nil, err
	}
	p := new(PromptRequest)
	if err := convert(p, p2); err != nil {
		return nil, fmt.Errorf("%w: the prompt in v1's words: %v", ErrInvalidParams, err)
	}
	life := a.v2.start(a)
	if life == nil {
		return nil, fmt.Errorf("%w: session/prompt after Close", ErrConnClosed)
	}
	sid := p.SessionID
	n := a.v2.nextID.Add(1)
	a.v2.mu.Lock()
	s := a.v2.session(sid)
	s.inTurn++
	// The acknowledged prompt is the user message the turn's user chunks
	// belong to; the agent's answer and thoughts are one message each.
	s.msgIDs["user_message_chunk"] = MessageID(fmt.Sprintf("user-%d", n))
	s.msgIDs["agent_message_chunk"] = MessageID(fmt.Sprintf("agent-%d", n))
	s.msgIDs["agent_thought_chunk"] = MessageID(fmt.Sprintf("thought-%d", n))
	ack := &V2PromptResponse{MessageID: s.msgIDs["user_message_chunk"]}
	a.v2.mu.Unlock()
	if err := a.sendState(ctx, sid, &V2RunningStateUpdate{}); err != nil {
		a.endTurnV2(sid)
		return nil, err
	}
	// The turn keeps the connection's drain waiting, as a v1 prompt
	// being answered does: `agent < requests.jsonl` sees every turn end.
	release, _ := a.rpc.Hold()
	a.v2.wg.Add(1)
	go func() {
		defer a.v2.wg.Done()
		defer release()
		resp, err := a.runTurn(life, req.Seq, p)
		a.endTurnV2(sid)
		idle := &V2IdleStateUpdate{}
		stop := StopReasonEndTurn
		switch {
		case err != nil:
			stop = StopReasonError
			idle.Error, _ = json.Marshal(WireError(err))
		case resp.StopReason != "":
			stop = resp.StopReason
		}
		idle.StopReason, idle.Meta = &stop, resp.metaOrNil()
		if err := a.sendState(life, sid, idle); err != nil {
			a.opts.logf("acp: the end of a v2 turn of session %q was not sent: %v", sid, err)
		}
	}()
	return ack, nil
}

func (r *PromptResponse) metaOrNil() Meta {
	if r == nil {
		return nil
	}
	return r.Meta
}

func (a *AgentConn) endTurnV2(sid SessionID) {
	a.v2.mu.Lock()
	defer a.v2.mu.Unlock()
	a.v2.session(sid).inTurn--
}

// sendState sends a state update with the session's background list.
func (a *AgentConn) sendState(ctx context.Context, sid SessionID, st V2State) error {
	bg := a.v2.background(sid)
	switch st := st.(type) {
	case *V2RunningStateUpdate:
		st.Background = bg
	case *V2IdleStateUpdate:
		st.Background = bg
	case *V2RequiresActionStateUpdate:
		st.Background = bg
	}
	return a.rpc.Notify(ctx, MethodSessionUpdate, &V2UpdateSessionNotification{SessionID: sid, Update: &V2StateUpdate{State: st}})
}

// SessionUpdateV2 sends a v2 session/update as it is, on a connection that
// negotiated v2; terminal and tool call updates are tracked for the
// background list as with SessionUpdate.
func (a *AgentConn) SessionUpdateV2(ctx context.Context, n *V2UpdateSessionNotification) error {
	if !a.isV2() {
		return notInVersion("v2 "+MethodSessionUpdate, a.ProtocolVersion())
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return a.sendUpdateV2(ctx, raw)
}

// sessionUpdateInV2 is SessionUpdate on a v2 connection.
func (a *AgentConn) sessionUpdateInV2(ctx context.Context, n *SessionNotification) error {
	raw, err := json.Marshal(n)
	if err != nil {
		return err
	}
	var env struct {
		SessionID SessionID                  `json:"sessionId"`
		Update    map[string]json.RawMessage `json:"update"`
		Meta      json.RawMessage            `json:"_meta,omitempty"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	var kind string
	_ = json.Unmarshal(env.Update["sessionUpdate"], &kind)
	switch kind {
	case "user_message_chunk", "agent_message_chunk", "agent_thought_chunk":
		if _, ok := env.Update["messageId"]; !ok {
			a.v2.mu.Lock()
			s := a.v2.session(n.SessionID)
			id := s.msgIDs[kind]
			if id == "" {
				id = MessageID(fmt.Sprintf("%s-%d", strings.TrimSuffix(kind, "_chunk"), a.v2.nextID.Add(1)))
				s.msgIDs[kind] = id
			}
			a.v2.mu.Unlock()
			env.Update["messageId"], _ = json.Marshal(id)
		}
	case "tool_call":
		env.Update["sessionUpdate"] = json.RawMessage(`"tool_call_update"`)
	case "plan":
		// v2 names plans; a v1 agent has one per session, "plan".
		items := map[string]json.RawMessage{"type": json.RawMessage(`"items"`), "planId": json.RawMessage(`"plan"`), "entries": env.Update["entries"]}
		if items["entries"] == nil {
			items["entries"] = json.RawMessage(`[]`)
		}
		plan, _ := json.Marshal(items)
		env.Update = map[string]json.RawMessage{"sessionUpdate": json.RawMessage(`"plan_update"`), "plan": plan}
	case "config_option_update":
		if opts, err := renameConfigIDs(env.Update["configOptions"], v1ConfigIDKey, v2ConfigIDKey); err == nil && opts != nil {
			env.Update["configOptions"] = opts
		}
	case "current_mode_update":
		a.opts.logf("acp: a %s session update has no v2 form; not sent", kind)
		return nil
	}
	raw, err = json.Marshal(env)
	if err != nil {
		return err
	}
	return a.sendUpdateV2(ctx, raw)
}

// requestPermissionInV2 is RequestPermission on a v2 connection: the tool
// call is the subject, its title the request's; the session shows
// requires_action while the client decides, if a turn is running.
func (a *AgentConn) requestPermissionInV2(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	r := &V2RequestPermissionRequest{SessionID: req.SessionID, Meta: req.Meta}
	if req.ToolCall.Title != nil {
		r.Title = *req.ToolCall.Title
	}
	if r.Title == "" {
		r.Title = "Allow tool call " + string(req.ToolCall.ToolCallID) + "?"
	}
	subject := &V2ToolCallPermissionSubject{}
	if err := convert(&subject.ToolCall, &req.ToolCall); err != nil {
		return nil, err
	}
	r.Subject = subject
	if err := convert(&r.Options, req.Options); err != nil {
		return nil, err
	}
	a.v2.mu.Lock()
	inTurn := a.v2.session(req.SessionID).inTurn > 0
	a.v2.mu.Unlock()
	if inTurn {
		_ = a.sendState(ctx, req.SessionID, &V2RequiresActionStateUpdate{})
		defer func() { _ = a.sendState(context.WithoutCancel(ctx), req.SessionID, &V2RunningStateUpdate{}) }()
	}
	resp, err := call[V2RequestPermissionResponse](ctx, &a.conn, MethodSessionRequestPermission, r)
	if err != nil {
		return nil, err
	}
	out := new(RequestPermissionResponse)
	return out, convert(out, resp)
}
