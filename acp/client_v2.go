package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// A ClientConn that negotiated v2 (ConnOptions.OfferV2, and an agent that
// answered 2) keeps the methods a v1 client calls: Prompt still returns
// when the turn ends, with its stop reason, though in v2 session/prompt is
// only acknowledged and the turn ends with an idle state_update;
// NewSession, ResumeSession, ListSessions, SetSessionConfigOption,
// Authenticate (auth/login) and Logout (auth/logout) say their v1
// requests and answers in v2's words. What v2 adds has methods of its own:
// View, CancelTerminal, CancelToolCall, NewSessionV2, ResumeSessionV2.
// What v2 dropped (session/load, session/set_mode, and the client's
// terminal/* and fs/*) fails with ErrNotInVersion, or is not served.
//
// The Client's v1 handlers go on working: a v2 session/update reaches
// SessionUpdate in v1's words where v1 has them (a message chunk as such,
// a tool call the view had not seen as a ToolCall, later ones as
// ToolCallUpdate, a new full message as chunks), and permission requests
// reach RequestPermission. A Client that implements V2UpdateHandler or
// V2PermissionHandler gets the v2 values themselves instead.

// V2UpdateHandler is implemented by a Client that takes v2 session updates
// as they are. On a v2 connection SessionUpdateV2 replaces SessionUpdate:
// every session/update, in order, after it has been applied to the
// session's View. A UI of background work reads View(sid).Background()
// here when the update is a *V2StateUpdate, *V2TerminalUpdate or
// *V2ToolCallUpdate: these are the events that change it.
type V2UpdateHandler interface {
	SessionUpdateV2(ctx context.Context, n *V2UpdateSessionNotification) error
}

// V2StateHandler is implemented by a Client that keeps its v1 handlers
// (no V2UpdateHandler) and still wants v2's state updates, which v1 has no
// words for: the turn's state and the background list. SessionStateV2 is
// called for every state update, in order with the translated updates
// around it, after it has been applied to the session's View (whose
// Background then has the list joined with each item's current form), and
// before a Prompt that the update ends returns.
type V2StateHandler interface {
	SessionStateV2(ctx context.Context, sid SessionID, u *V2StateUpdate) error
}

// V2PermissionHandler is implemented by a Client that answers v2
// permission requests (a title and a subject: a tool call or a command)
// as they are, instead of through RequestPermission.
type V2PermissionHandler interface {
	RequestPermissionV2(ctx context.Context, req *V2RequestPermissionRequest) (*V2RequestPermissionResponse, error)
}

// ErrNotCancellable is wrapped by the error of CancelTerminal or
// CancelToolCall for an item that does not advertise capabilities.cancel
// in the session's View; nothing is sent, as the protocol asks.
var ErrNotCancellable = errors.New("acp: the item does not advertise capabilities.cancel")

// clientV2 is a v2 ClientConn's state of its sessions.
type clientV2 struct {
	mu    sync.Mutex
	views map[SessionID]*SessionView
	turns map[SessionID][]*clientTurn
}

// View returns the session's view of a v2 connection: what the agent's
// updates said so far, upserts applied (see SessionView). It is created
// on first use; on a v1 connection it stays empty.
func (c *ClientConn) View(sid SessionID) *SessionView {
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	if c.v2.views == nil {
		c.v2.views = map[SessionID]*SessionView{}
	}
	v := c.v2.views[sid]
	if v == nil {
		v = &SessionView{}
		c.v2.views[sid] = v
	}
	return v
}

func (c *ClientConn) forgetView(sid SessionID) {
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	delete(c.v2.views, sid)
}

func (c *ClientConn) handleV2(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case MethodSessionUpdate:
		return nil, c.sessionUpdateV2(ctx, req.Params)
	case MethodSessionRequestPermission:
		if h, ok := c.client.(V2PermissionHandler); ok {
			return serve(ctx, req, h.RequestPermissionV2)
		}
		return serve(ctx, req, c.requestPermissionV1)
	}
	if e, ok := c.client.(Elicitor); ok {
		switch req.Method {
		case MethodElicitationCreate:
			return serve(ctx, req, func(ctx context.Context, r *V2CreateElicitationRequest) (*V2CreateElicitationResponse, error) {
				v1 := new(CreateElicitationRequest)
				if err := convert(v1, r); err != nil {
					return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
				}
				resp, err := e.CreateElicitation(ctx, v1)
				if err != nil || resp == nil {
					return nil, err
				}
				out := new(V2CreateElicitationResponse)
				return out, convert(out, resp)
			})
		case MethodElicitationComplete:
			return notify(ctx, req, e.CompleteElicitation)
		}
	}
	if res, ok, err := serveTerminalInput(ctx, c.client, req); ok {
		return res, err
	}
	// terminal/* and fs/* do not exist in v2: method not found.
	return serveExt(ctx, c.client, req)
}

// sessionUpdateV2 applies an update to the session's view, ends the
// Prompts waiting for it, and hands it to the Client.
func (c *ClientConn) sessionUpdateV2(ctx context.Context, raw json.RawMessage) error {
	n := new(V2UpdateSessionNotification)
	if err := decodeParams(raw, n); err != nil {
		return err
	}
	var env struct {
		Update json.RawMessage `json:"update"`
	}
	_ = json.Unmarshal(raw, &env)
	v := c.View(n.SessionID)
	fresh := v.apply(n.Update, env.Update)
	if su, ok := n.Update.(*V2StateUpdate); ok {
		// After the handler: a Prompt returns once the update that ends
		// its turn has been handled, as in v1.
		defer c.turnState(n.SessionID, su.State)
	}
	if h, ok := c.client.(V2UpdateHandler); ok {
		return h.SessionUpdateV2(context.WithValue(ctx, rawParamsKey{}, raw), n)
	}
	if su, ok := n.Update.(*V2StateUpdate); ok {
		if h, ok := c.client.(V2StateHandler); ok {
			return h.SessionStateV2(ctx, n.SessionID, su)
		}
		return nil
	}
	// RawParams stays nil here: the handler gets a translation, not what
	// the agent sent.
	for _, u := range v1SessionUpdates(v, n.Update, env.Update, fresh) {
		if err := c.client.SessionUpdate(ctx, &SessionNotification{SessionID: n.SessionID, Update: u, Meta: n.Meta}); err != nil {
			return err
		}
	}
	return nil
}

// v1SessionUpdates says a v2 update in v1's words, for a Client without
// V2UpdateHandler; nil when v1 has none for it (state updates, plans).
func v1SessionUpdates(v *SessionView, u V2SessionUpdate, raw json.RawMessage, fresh bool) []SessionUpdate {
	decode := func(raw json.RawMessage) SessionUpdate {
		var n SessionNotification
		if json.Unmarshal([]byte(`{"sessionId":"","update":`+string(raw)+`}`), &n) != nil {
			return nil
		}
		if _, unknown := n.Update.(*UnknownSessionUpdate); unknown && !isDisplayTerminalUpdate(n.Update) {
			return nil
		}
		return n.Update
	}
	var out []SessionUpdate
	switch u := u.(type) {
	case *V2StateUpdate:
		return nil
	case *V2ConfigOptionUpdate:
		if r, err := renameConfigOptionsIn(raw, v2ConfigIDKey, v1ConfigIDKey); err == nil {
			raw = r
		}
	case *V2PlanUpdate:
		// v1 has one plan per session: every items plan is it.
		items, ok := u.Plan.(*V2PlanItems)
		if !ok {
			return nil
		}
		b, err := json.Marshal(map[string]any{"sessionUpdate": "plan", "entries": items.Entries})
		if err != nil {
			return nil
		}
		raw = b
	case *V2ToolCallUpdate:
		if fresh {
			// v1 announces a tool call with tool_call; the view has it whole.
			if full, err := json.Marshal(v.ToolCall(u.ToolCallID)); err == nil {
				if r, err := retag(full, "sessionUpdate", "tool_call", true); err == nil {
					if tc := decode(r); tc != nil {
						return []SessionUpdate{tc}
					}
				}
			}
		}
	case *V2ToolCallContentChunk:
		// v1 replaces a tool call's content as a whole.
		tc := v.ToolCall(u.ToolCallID)
		if tc == nil {
			return nil
		}
		full, err := json.Marshal(&V2ToolCallUpdate{ToolCallID: tc.ToolCallID, Content: tc.Content})
		if err != nil {
			return nil
		}
		raw, _ = retag(full, "sessionUpdate", "tool_call_update", true)
	case *V2UserMessage, *V2AgentMessage, *V2AgentThought:
		// v1 streams messages as chunks and cannot replace one: a new
		// message is sent as its chunks, a changed one not at all.
		if !fresh {
			return nil
		}
		var m struct {
			MessageID MessageID         `json:"messageId"`
			Content   []json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		kind := map[string]string{"user_message": "user_message_chunk", "agent_message": "agent_message_chunk", "agent_thought": "agent_thought_chunk"}
		var head struct {
			SessionUpdate string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(raw, &head)
		for _, b := range m.Content {
			chunk, _ := json.Marshal(map[string]any{"sessionUpdate": kind[head.SessionUpdate], "messageId": m.MessageID, "content": b})
			if cu := decode(chunk); cu != nil {
				out = append(out, cu)
			}
		}
		return out
	}
	if cu := decode(raw); cu != nil {
		out = append(out, cu)
	}
	return out
}

// isDisplayTerminalUpdate reports whether an unknown v1 update is one of
// the v2 terminal updates, which v1 clients show (package display).
func isDisplayTerminalUpdate(u SessionUpdate) bool {
	x, ok := u.(*UnknownSessionUpdate)
	return ok && (x.Kind == SessionUpdateTerminalUpdate || x.Kind == SessionUpdateTerminalOutputChunk)
}

// requestPermissionV1 asks the Client's RequestPermission in v1's words:
// the subject becomes the tool call (a command, an execute tool call with
// the command as its raw input), the title its title.
func (c *ClientConn) requestPermissionV1(ctx context.Context, r *V2RequestPermissionRequest) (*V2RequestPermissionResponse, error) {
	title := r.Title
	tc := ToolCallUpdate{ToolCallID: "permission", Title: &title}
	switch s := r.Subject.(type) {
	case *V2ToolCallPermissionSubject:
		if err := convert(&tc, &s.ToolCall); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
		}
		if tc.Title == nil {
			tc.Title = &title
		}
	case *V2CommandPermissionSubject:
		kind := ToolKindExecute
		tc.Kind = &kind
		if s.ToolCallID != nil {
			tc.ToolCallID = *s.ToolCallID
		}
		tc.RawInput, _ = json.Marshal(map[string]string{"command": s.Command, "cwd": string(s.Cwd)})
	}
	v1 := &RequestPermissionRequest{SessionID: r.SessionID, ToolCall: tc, Meta: r.Meta}
	if err := convert(&v1.Options, r.Options); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	resp, err := c.client.RequestPermission(ctx, v1)
	if err != nil || resp == nil {
		return nil, err
	}
	out := new(V2RequestPermissionResponse)
	return out, convert(out, resp)
}

// CancelTerminal sends terminal/cancel (v2): the agent stops the
// terminal's process. The answer means the agent accepted; it confirms
// with a terminal_update carrying the exit status, and the terminal is
// not released. The terminal must advertise capabilities.cancel in the
// session's View, or nothing is sent and the error wraps
// ErrNotCancellable.
func (c *ClientConn) CancelTerminal(ctx context.Context, req *V2CancelTerminalRequest) (*V2CancelTerminalResponse, error) {
	if !c.isV2() {
		return nil, notInVersion(MethodTerminalCancel, c.ProtocolVersion())
	}
	if !c.View(req.SessionID).terminalCancellable(req.TerminalID) {
		return nil, fmt.Errorf("%w: terminal %q of session %q", ErrNotCancellable, req.TerminalID, req.SessionID)
	}
	return call[V2CancelTerminalResponse](ctx, &c.conn, MethodTerminalCancel, req)
}

// CancelToolCall sends tool_call/cancel (v2), as CancelTerminal does for
// a terminal; the agent confirms with a tool_call_update to a final
// status.
func (c *ClientConn) CancelToolCall(ctx context.Context, req *V2CancelToolCallRequest) (*V2CancelToolCallResponse, error) {
	if !c.isV2() {
		return nil, notInVersion(MethodToolCallCancel, c.ProtocolVersion())
	}
	if !c.View(req.SessionID).toolCallCancellable(req.ToolCallID) {
		return nil, fmt.Errorf("%w: tool call %q of session %q", ErrNotCancellable, req.ToolCallID, req.SessionID)
	}
	return call[V2CancelToolCallResponse](ctx, &c.conn, MethodToolCallCancel, req)
}

// NewSessionV2 sends a v2 session/new as it is.
func (c *ClientConn) NewSessionV2(ctx context.Context, req *V2NewSessionRequest) (*V2NewSessionResponse, error) {
	if !c.isV2() {
		return nil, notInVersion("v2 "+MethodSessionNew, c.ProtocolVersion())
	}
	resp, err := call[V2NewSessionResponse](ctx, &c.conn, MethodSessionNew, req)
	if err == nil {
		c.View(resp.SessionID)
	}
	return resp, err
}

// ResumeSessionV2 sends a v2 session/resume as it is. With ReplayFrom the
// agent replays the session's history as session/update notifications and
// then reports its current state with a state update, all applied to the
// session's View (which is emptied first) and handled before this
// returns. (The pinned schema has no separate replay_complete update: the
// state update after the replay, before the answer, ends it.)
func (c *ClientConn) ResumeSessionV2(ctx context.Context, req *V2ResumeSessionRequest) (*V2ResumeSessionResponse, error) {
	if !c.isV2() {
		return nil, notInVersion("v2 "+MethodSessionResume, c.ProtocolVersion())
	}
	if req.ReplayFrom != nil {
		c.View(req.SessionID).reset()
	}
	return call[V2ResumeSessionResponse](ctx, &c.conn, MethodSessionResume, req)
}

// newSessionInV2 is NewSession on a v2 connection.
func (c *ClientConn) newSessionInV2(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	r := &V2NewSessionRequest{Cwd: V2AbsolutePath(req.Cwd), Meta: req.Meta}
	for _, d := range req.AdditionalDirectories {
		r.AdditionalDirectories = append(r.AdditionalDirectories, V2AbsolutePath(d))
	}
	var err error
	if r.MCPServers, err = v2MCPServers(req.MCPServers); err != nil {
		return nil, fmt.Errorf("acp: MCP servers in v2's words: %w", err)
	}
	resp, err := c.NewSessionV2(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &NewSessionResponse{SessionID: resp.SessionID, Meta: resp.Meta}
	_ = convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v2ConfigIDKey, v1ConfigIDKey)
	return out, nil
}

// resumeSessionInV2 is ResumeSession on a v2 connection: no replay.
func (c *ClientConn) resumeSessionInV2(ctx context.Context, req *ResumeSessionRequest) (*ResumeSessionResponse, error) {
	r := &V2ResumeSessionRequest{SessionID: req.SessionID, Cwd: V2AbsolutePath(req.Cwd), Meta: req.Meta}
	for _, d := range req.AdditionalDirectories {
		r.AdditionalDirectories = append(r.AdditionalDirectories, V2AbsolutePath(d))
	}
	var err error
	if r.MCPServers, err = v2MCPServers(req.MCPServers); err != nil {
		return nil, fmt.Errorf("acp: MCP servers in v2's words: %w", err)
	}
	resp, err := c.ResumeSessionV2(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &ResumeSessionResponse{Meta: resp.Meta}
	_ = convertConfigOptions(&out.ConfigOptions, resp.ConfigOptions, v2ConfigIDKey, v1ConfigIDKey)
	return out, nil
}

// translated sends a v1 request on a v2 connection as its v2 counterpart
// (the same method, the JSON read as the v2 type after fix, if any) and
// reads the answer back into the v1 result.
func translated[V2Req, V2Resp, Resp any](ctx context.Context, c *ClientConn, method string, req any, fix func(json.RawMessage) (json.RawMessage, error)) (*Resp, error) {
	b, err := json.Marshal(req)
	if err == nil && fix != nil {
		b, err = fix(b)
	}
	r := new(V2Req)
	if err == nil {
		err = json.Unmarshal(b, r)
	}
	if err != nil {
		return nil, fmt.Errorf("acp: %s in v2's words: %w", method, err)
	}
	resp, err := call[V2Resp](ctx, &c.conn, method, r)
	if err != nil {
		return nil, err
	}
	b, err = json.Marshal(resp)
	if err == nil {
		// v2 answers that list config options name their IDs "configId".
		b, err = renameConfigOptionsIn(b, v2ConfigIDKey, v1ConfigIDKey)
	}
	out := new(Resp)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return nil, fmt.Errorf("acp: the answer to %s in v1's words: %w", method, err)
	}
	return out, nil
}
