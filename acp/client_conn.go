package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// ClientConn is the client's side of a connection: it calls the agent's
// methods and serves the client methods with a Client.
type ClientConn struct {
	conn
	client Client
	proc   *agentProcess // set by StartAgent
	models sessionModels // the draft's session models (models.go)
	negotiated
	v2     clientV2
	v2init atomic.Pointer[V2InitializeResponse] // the agent's answer, if v2 was negotiated
}

// NewClientConn serves client on a connection to an agent: r carries what the
// agent writes (its stdout) and w what it reads (its stdin). If client
// implements ClientConnSetter, SetConn is called with the new connection
// before any message is served. Serving starts at once; Close ends the
// connection.
func NewClientConn(client Client, r io.Reader, w io.Writer, opts *ConnOptions) *ClientConn {
	return newClientConn(client, r, w, opts, nil)
}

func newClientConn(client Client, r io.Reader, w io.Writer, opts *ConnOptions, proc *agentProcess) *ClientConn {
	c := &ClientConn{client: client, proc: proc}
	c.conn = newConn(r, w, c.handle, opts, false)
	if s, ok := client.(ClientConnSetter); ok {
		s.SetConn(c)
	}
	close(c.ready)
	return c
}

func (c *ClientConn) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if c.isV2() {
		return c.handleV2(ctx, req)
	}
	switch req.Method {
	case MethodSessionUpdate:
		return notify(ctx, req, c.client.SessionUpdate)
	case MethodSessionRequestPermission:
		return serve(ctx, req, c.client.RequestPermission)
	}
	if t, ok := c.client.(TerminalHandler); ok {
		switch req.Method {
		case MethodTerminalCreate:
			return serve(ctx, req, t.CreateTerminal)
		case MethodTerminalOutput:
			return serve(ctx, req, t.TerminalOutput)
		case MethodTerminalWaitForExit:
			return serve(ctx, req, t.WaitForTerminalExit)
		case MethodTerminalKill:
			return serve(ctx, req, t.KillTerminal)
		case MethodTerminalRelease:
			return serve(ctx, req, t.ReleaseTerminal)
		}
	}
	if f, ok := c.client.(FileReader); ok && req.Method == MethodFSReadTextFile {
		return serve(ctx, req, f.ReadTextFile)
	}
	if f, ok := c.client.(FileWriter); ok && req.Method == MethodFSWriteTextFile {
		return serve(ctx, req, f.WriteTextFile)
	}
	if e, ok := c.client.(Elicitor); ok {
		switch req.Method {
		case MethodElicitationCreate:
			return serve(ctx, req, e.CreateElicitation)
		case MethodElicitationComplete:
			return notify(ctx, req, e.CompleteElicitation)
		}
	}
	if res, ok, err := serveTerminalInput(ctx, c.client, req); ok {
		return res, err
	}
	return serveExt(ctx, c.client, req)
}

// initializeRequest is req (nil: protocol version 1 and nothing else) with
// the capabilities the client's handler implements filled in.
func (c *ClientConn) initializeRequest(req *InitializeRequest) *InitializeRequest {
	r := InitializeRequest{ProtocolVersion: ProtocolVersion1}
	if req != nil {
		r = *req
	}
	caps := ClientCapabilities{}
	if r.ClientCapabilities != nil {
		caps = *r.ClientCapabilities
	}
	_, caps.Terminal = c.client.(TerminalHandler)
	fs := FileSystemCapabilities{}
	if caps.FS != nil {
		fs = *caps.FS
	}
	_, fs.ReadTextFile = c.client.(FileReader)
	_, fs.WriteTextFile = c.client.(FileWriter)
	caps.FS = &fs
	caps.Meta = withInputCapability(c.client, caps.Meta)
	r.ClientCapabilities = &caps
	return &r
}

// Authenticate sends authenticate; in v2, auth/login with the same method id.
func (c *ClientConn) Authenticate(ctx context.Context, req *AuthenticateRequest) (*AuthenticateResponse, error) {
	if c.isV2() {
		return translated[V2LoginAuthRequest, V2LoginAuthResponse, AuthenticateResponse](ctx, c, MethodAuthLogin, req, nil)
	}
	return call[AuthenticateResponse](ctx, &c.conn, MethodAuthenticate, req)
}

// Logout sends logout; in v2, auth/logout.
func (c *ClientConn) Logout(ctx context.Context, req *LogoutRequest) (*LogoutResponse, error) {
	if c.isV2() {
		if req == nil {
			req = &LogoutRequest{}
		}
		return translated[V2LogoutAuthRequest, V2LogoutAuthResponse, LogoutResponse](ctx, c, MethodAuthLogout, req, nil)
	}
	return call[LogoutResponse](ctx, &c.conn, MethodLogout, req)
}

// NewSession sends session/new. Models the agent offers the draft's way
// are kept for SessionModels.
func (c *ClientConn) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	if c.isV2() && req != nil {
		return c.newSessionInV2(ctx, req)
	}
	return callSession[NewSessionResponse](ctx, c, MethodSessionNew, req, "")
}

// LoadSession sends session/load. The agent replays the session's history as
// session/update notifications, all handled before this returns.
func (c *ClientConn) LoadSession(ctx context.Context, req *LoadSessionRequest) (*LoadSessionResponse, error) {
	if c.isV2() {
		return nil, notInVersion(MethodSessionLoad, ProtocolVersion2)
	}
	var id SessionID
	if req != nil {
		id = req.SessionID
	}
	return callSession[LoadSessionResponse](ctx, c, MethodSessionLoad, req, id)
}

// ResumeSession sends session/resume.
func (c *ClientConn) ResumeSession(ctx context.Context, req *ResumeSessionRequest) (*ResumeSessionResponse, error) {
	if c.isV2() && req != nil {
		return c.resumeSessionInV2(ctx, req)
	}
	var id SessionID
	if req != nil {
		id = req.SessionID
	}
	return callSession[ResumeSessionResponse](ctx, c, MethodSessionResume, req, id)
}

// ListSessions sends session/list.
func (c *ClientConn) ListSessions(ctx context.Context, req *ListSessionsRequest) (*ListSessionsResponse, error) {
	if c.isV2() {
		if req == nil {
			req = &ListSessionsRequest{}
		}
		return translated[V2ListSessionsRequest, V2ListSessionsResponse, ListSessionsResponse](ctx, c, MethodSessionList, req, nil)
	}
	return call[ListSessionsResponse](ctx, &c.conn, MethodSessionList, req)
}

// CloseSession sends session/close.
func (c *ClientConn) CloseSession(ctx context.Context, req *CloseSessionRequest) (*CloseSessionResponse, error) {
	if req != nil {
		defer c.forgetView(req.SessionID)
	}
	return call[CloseSessionResponse](ctx, &c.conn, MethodSessionClose, req)
}

// DeleteSession sends session/delete.
func (c *ClientConn) DeleteSession(ctx context.Context, req *DeleteSessionRequest) (*DeleteSessionResponse, error) {
	if req != nil {
		defer c.forgetView(req.SessionID)
	}
	return call[DeleteSessionResponse](ctx, &c.conn, MethodSessionDelete, req)
}

// SetSessionMode sends session/set_mode.
func (c *ClientConn) SetSessionMode(ctx context.Context, req *SetSessionModeRequest) (*SetSessionModeResponse, error) {
	if c.isV2() {
		return nil, notInVersion(MethodSessionSetMode, ProtocolVersion2)
	}
	return call[SetSessionModeResponse](ctx, &c.conn, MethodSessionSetMode, req)
}

// SetSessionConfigOption sends session/set_config_option.
func (c *ClientConn) SetSessionConfigOption(ctx context.Context, req *SetSessionConfigOptionRequest) (*SetSessionConfigOptionResponse, error) {
	if c.isV2() && req != nil {
		// v1 sends a value id untagged; v2 tags it "id".
		return translated[V2SetSessionConfigOptionRequest, V2SetSessionConfigOptionResponse, SetSessionConfigOptionResponse](ctx, c, MethodSessionSetConfigOption, req,
			func(b json.RawMessage) (json.RawMessage, error) { return retag(b, "type", "id", false) })
	}
	return call[SetSessionConfigOptionResponse](ctx, &c.conn, MethodSessionSetConfigOption, req)
}

// Prompt sends session/prompt and returns when the turn ends. Every
// session/update the agent sent before its answer has been handled by then.
//
// In v2, where session/prompt is only acknowledged, Prompt returns when
// the idle state update that ends the turn has been handled: the first
// after the agent reported the turn running (or waiting for the user) or
// acknowledged the prompt. Its stop reason is the answer's; a stop reason
// "error" is returned as the error (a *PeerError with the agent's error,
// as a v1 agent's failed session/prompt is). The turn's usage, which v2
// reports in usage_update updates, is View(sid).Usage(). A ctx that ends before the
// acknowledgement withdraws the prompt with $/cancel_request; after it,
// cancelling works as in v1 below.
//
// Cancelling ctx cancels the turn the way ACP asks a client to: Prompt
// sends session/cancel for the session, then waits for the agent's answer,
// at most ConnOptions.PromptCancelWait (5 s by default) after ctx ended.
// If the agent answers in time, Prompt returns that answer (normally
// StopReasonCancelled, with a nil error: the turn ended as the protocol
// says; check the stop reason, not ctx). If it does not, the request is
// abandoned with $/cancel_request and Prompt returns ctx's error; so it
// does when the connection ends meanwhile. An error answer is returned as
// it is. A ctx already done when Prompt is called sends nothing.
// Calling Cancel yourself and letting Prompt return is the other way, with
// no bound of Prompt's own.
func (c *ClientConn) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	if c.isV2() && req != nil {
		return c.promptV2(ctx, req)
	}
	wait := c.opts.promptCancelWait()
	if req == nil || wait < 0 {
		return call[PromptResponse](ctx, &c.conn, MethodSessionPrompt, req)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The call outlives ctx by the wait for the agent's answer; abandon
	// ends it, which sends $/cancel_request.
	callCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	var w cancelWatch
	queued := func() { w.start(ctx, callCtx, abandon, wait, c, req.SessionID) }
	resp := new(PromptResponse)
	err := c.rpc.CallQueued(callCtx, MethodSessionPrompt, req, resp, queued)
	if !w.fired() {
		// ctx did not end while the call was out: an ordinary answer.
		if err != nil {
			return nil, peerCallError(MethodSessionPrompt, err)
		}
		return resp, nil
	}
	if err == nil {
		return resp, nil
	}
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return nil, peerCallError(MethodSessionPrompt, err) // the agent's own answer
	}
	return nil, ctx.Err()
}

// cancelWatch is how Prompt cancels a turn when its ctx ends: it sends
// session/cancel for the session and bounds the wait for the agent's
// answer, past which the call is abandoned.
type cancelWatch struct {
	stop      func() bool   // stops the watch of ctx
	cancelled chan struct{} // closed once the watch has sent session/cancel (or failed to)
	timer     *time.Timer   // the bound of the wait, set by the watch
}

// start watches ctx. It is called once the prompt is queued, so that
// session/cancel is written after it; abandon ends callCtx, the call's
// own context, which outlives ctx by the wait.
func (w *cancelWatch) start(ctx, callCtx context.Context, abandon func(), wait time.Duration, c *ClientConn, sid SessionID) {
	w.cancelled = make(chan struct{})
	w.stop = context.AfterFunc(ctx, func() {
		defer close(w.cancelled)
		w.timer = time.AfterFunc(wait, abandon)
		if err := c.Cancel(callCtx, &CancelNotification{SessionID: sid}); err != nil {
			abandon()
		}
	})
}

// fired stops the watch and reports whether ctx had ended meanwhile,
// after waiting for the watch to have sent session/cancel; the bound of
// the wait is then stopped too.
func (w *cancelWatch) fired() bool {
	if w.stop == nil || w.stop() {
		return false
	}
	<-w.cancelled
	w.timer.Stop()
	return true
}

// Cancel sends the session/cancel notification. The pending Prompt then ends
// with StopReasonCancelled.
func (c *ClientConn) Cancel(ctx context.Context, n *CancelNotification) error {
	return c.rpc.Notify(ctx, MethodSessionCancel, n)
}

// Close ends the connection and joins its goroutines, reporting what went
// wrong on the way out, as AgentConn.Close does. For a connection made by
// StartAgent it also shuts the agent process down: close its stdin, wait,
// SIGTERM, wait, SIGKILL, each step bounded (see StartAgent); it then
// reports an agent that had to be signalled (ErrAgentSignalled) and
// handlers it had to abandon (ErrHandlersRunning), not the closing of the
// pipes, which the shutdown itself closed. Close is idempotent; every call
// returns the first one's result.
func (c *ClientConn) Close() error {
	if c.proc != nil {
		return c.proc.shutdown(c.rpc)
	}
	return c.rpc.Close()
}
