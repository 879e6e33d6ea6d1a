package acp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// AgentConn is the agent's side of a connection: it serves the agent methods
// with an Agent and calls the client's methods.
//
// AgentConn keeps the protocol's rules for prompt turns, so that an Agent
// need not: the ctx of a session's running Prompt is cancelled
// (context.Cause: ErrTurnCancelled) when the client sends session/cancel
// or session/close for the session, even one sent right behind the prompt,
// before its handler started; with ConnOptions.SupersedePrompts, also
// (ErrTurnSuperseded) when it sends a newer session/prompt for the
// session, which then waits for the older Prompt to return; and a turn so
// ended is answered with StopReasonCancelled, whatever error Prompt
// returns once its ctx is cancelled. An Agent that also implements
// SessionCanceller has its Cancel called after the session's turns are
// cancelled.
type AgentConn struct {
	conn
	agent Agent
	turns turns

	negotiated
	v2 agentV2

	mu         sync.Mutex
	clientCaps *ClientCapabilities // from the last initialize request
	// clientCapsV2 is what a v2 client advertised.
	clientCapsV2 *V2ClientCapabilities
}

// ServeAgent serves agent to a client over r (the agent's stdin) and w (its
// stdout) until the connection ends or ctx does, then closes the connection
// and waits for every goroutine it started, handlers included. It is
// NewAgentConn, Wait and Close in one call, the usual main of an agent
// process:
//
//	err := acp.ServeAgent(ctx, agent, os.Stdin, os.Stdout, nil)
//
// It returns nil when the client ended its input (closed the agent's
// stdin) and the requests it sent before that have been answered (see
// ConnOptions.DrainTimeout); ctx.Err() when ctx ended first; else the error that ended the
// connection (a failed read, a client that stopped reading: see
// ConnOptions.StallTimeout). What Close reports is joined to it.
func ServeAgent(ctx context.Context, agent Agent, r io.Reader, w io.Writer, opts *ConnOptions) error {
	a := NewAgentConn(agent, r, w, opts)
	var stopped error
	select {
	case <-a.Done():
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	closeErr := a.Close()
	if stopped != nil {
		return errors.Join(stopped, closeErr)
	}
	// After Close, Wait returns at once: the reader has stopped.
	return errors.Join(a.Wait(), closeErr)
}

// NewAgentConn serves agent on a connection to a client: r carries what the
// client writes (the agent's stdin) and w what it reads (the agent's stdout).
// If agent implements AgentConnSetter, SetConn is called with the new
// connection before any message is served, so that the agent can send
// updates and call the client from its handlers. Serving starts at once;
// Close ends the connection. ServeAgent does all this and waits for the end.
func NewAgentConn(agent Agent, r io.Reader, w io.Writer, opts *ConnOptions) *AgentConn {
	a := &AgentConn{agent: agent}
	a.conn = newConn(r, w, a.handle, opts, true)
	if s, ok := agent.(AgentConnSetter); ok {
		s.SetConn(a)
	}
	close(a.ready)
	return a
}

// Close ends the connection: handlers' contexts are cancelled, calls in
// flight fail with ErrConnClosed, and Close returns once every goroutine the
// connection started has returned, so a handler that ignores its context
// delays it. It reports what went wrong on the way out: closing r or w
// failed, or a write had failed before (what was queued behind it never
// reached the client). Close is idempotent; every call returns the first
// one's result.
func (a *AgentConn) Close() error {
	err := a.rpc.Close()
	a.v2.stop()
	return err
}

// Wait blocks until the connection has ended and every goroutine it
// started has returned, v2 turns included (they end with the connection).
// It returns the error that ended the connection, nil for a clean end.
func (a *AgentConn) Wait() error {
	err := a.rpc.Wait()
	a.v2.wg.Wait()
	return err
}

// ClientCapabilities returns the capabilities the client advertised in
// initialize, or an empty value before initialize.
func (a *AgentConn) ClientCapabilities() ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clientCaps == nil {
		return ClientCapabilities{}
	}
	return *a.clientCaps
}

func (a *AgentConn) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case MethodInitialize:
		return a.initializeAny(ctx, req)
	}
	if a.isV2() {
		return a.handleV2(ctx, req)
	}
	switch req.Method {
	case MethodSessionNew:
		return serve(ctx, req, a.agent.NewSession)
	case MethodSessionPrompt:
		return a.prompt(ctx, req)
	case MethodSessionCancel:
		return a.cancel(ctx, req)
	}
	switch req.Method {
	case MethodAuthenticate:
		if h, ok := a.agent.(Authenticator); ok {
			return serve(ctx, req, h.Authenticate)
		}
	case MethodLogout:
		if h, ok := a.agent.(LogoutHandler); ok {
			return serve(ctx, req, h.Logout)
		}
	case MethodSessionLoad:
		if h, ok := a.agent.(SessionLoader); ok {
			return serve(ctx, req, h.LoadSession)
		}
	case MethodSessionResume:
		if h, ok := a.agent.(SessionResumer); ok {
			return serve(ctx, req, h.ResumeSession)
		}
	case MethodSessionList:
		if h, ok := a.agent.(SessionLister); ok {
			return serve(ctx, req, h.ListSessions)
		}
	case MethodSessionClose:
		if h, ok := a.agent.(SessionCloser); ok {
			return serve(ctx, req, a.closeSession(h, req.Seq))
		}
	case MethodSessionDelete:
		if h, ok := a.agent.(SessionDeleter); ok {
			return serve(ctx, req, h.DeleteSession)
		}
	case MethodSessionSetMode:
		if h, ok := a.agent.(ModeSetter); ok {
			return serve(ctx, req, h.SetSessionMode)
		}
	case MethodSessionSetConfigOption:
		if h, ok := a.agent.(ConfigOptionSetter); ok {
			return serve(ctx, req, h.SetSessionConfigOption)
		}
	default:
		return serveExt(ctx, a.agent, req)
	}
	return nil, unsupported(req.Method)
}

// initialize records the client's capabilities, runs the Agent's Initialize
// and fills in the capabilities implied by the optional interfaces. The
// answer's version is 1: an Agent speaks v2 only through the SDK, which
// answers a v2 initialize itself (initializeV2).
func (a *AgentConn) initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	resp, _, err := a.initializeAs(ctx, req)
	return resp, err
}

// initializeAs runs the Agent's Initialize and completes its answer, which
// it returns in v1's words (ProtocolVersion 1), with the version the Agent
// answered (0 when it left it unset).
func (a *AgentConn) initializeAs(ctx context.Context, req *InitializeRequest) (*InitializeResponse, ProtocolVersion, error) {
	caps := ClientCapabilities{}
	if req.ClientCapabilities != nil {
		caps = *req.ClientCapabilities
	}
	a.mu.Lock()
	a.clientCaps = &caps
	a.mu.Unlock()

	resp, err := a.agent.Initialize(ctx, req)
	if err != nil || resp == nil {
		return resp, 0, err
	}
	answered := resp.ProtocolVersion
	resp.ProtocolVersion = ProtocolVersion1
	ac := AgentCapabilities{}
	if resp.AgentCapabilities != nil {
		ac = *resp.AgentCapabilities
	}
	if _, ok := a.agent.(SessionLoader); ok {
		ac.LoadSession = true
	}
	sc := SessionCapabilities{}
	if ac.SessionCapabilities != nil {
		sc = *ac.SessionCapabilities
	}
	if _, ok := a.agent.(SessionLister); ok && sc.List == nil {
		sc.List = &SessionListCapabilities{}
	}
	if _, ok := a.agent.(SessionResumer); ok && sc.Resume == nil {
		sc.Resume = &SessionResumeCapabilities{}
	}
	if _, ok := a.agent.(SessionCloser); ok && sc.Close == nil {
		sc.Close = &SessionCloseCapabilities{}
	}
	if _, ok := a.agent.(SessionDeleter); ok && sc.Delete == nil {
		sc.Delete = &SessionDeleteCapabilities{}
	}
	if sc.List != nil || sc.Resume != nil || sc.Close != nil || sc.Delete != nil || sc.AdditionalDirectories != nil || sc.Meta != nil {
		ac.SessionCapabilities = &sc
	}
	if _, ok := a.agent.(LogoutHandler); ok {
		auth := AgentAuthCapabilities{}
		if ac.Auth != nil {
			auth = *ac.Auth
		}
		if auth.Logout == nil {
			auth.Logout = &LogoutCapabilities{}
		}
		ac.Auth = &auth
	}
	resp.AgentCapabilities = &ac
	return resp, answered, nil
}

// SessionUpdate sends a session/update notification.
// On a v2 connection the update goes out in v2's words (see AgentConn's
// v2 notes in agent_v2.go).
func (a *AgentConn) SessionUpdate(ctx context.Context, n *SessionNotification) error {
	if a.isV2() {
		return a.sessionUpdateInV2(ctx, n)
	}
	return a.rpc.Notify(ctx, MethodSessionUpdate, n)
}

// RequestPermission sends session/request_permission; on a v2 connection
// in v2's words, with the session shown requiring action meanwhile.
func (a *AgentConn) RequestPermission(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	if a.isV2() {
		return a.requestPermissionInV2(ctx, req)
	}
	return call[RequestPermissionResponse](ctx, &a.conn, MethodSessionRequestPermission, req)
}

// v1Call sends a request of a method that ACP v2 took out of the
// protocol: on a v2 connection it fails with ErrNotInVersion, unsent.
func v1Call[Resp any](ctx context.Context, a *AgentConn, method string, req any) (*Resp, error) {
	if a.isV2() {
		return nil, notInVersion(method, ProtocolVersion2)
	}
	return call[Resp](ctx, &a.conn, method, req)
}

// ReadTextFile sends fs/read_text_file.
func (a *AgentConn) ReadTextFile(ctx context.Context, req *ReadTextFileRequest) (*ReadTextFileResponse, error) {
	return v1Call[ReadTextFileResponse](ctx, a, MethodFSReadTextFile, req)
}

// WriteTextFile sends fs/write_text_file.
func (a *AgentConn) WriteTextFile(ctx context.Context, req *WriteTextFileRequest) (*WriteTextFileResponse, error) {
	return v1Call[WriteTextFileResponse](ctx, a, MethodFSWriteTextFile, req)
}

// CreateElicitation sends elicitation/create.
func (a *AgentConn) CreateElicitation(ctx context.Context, req *CreateElicitationRequest) (*CreateElicitationResponse, error) {
	if a.isV2() {
		resp, err := translatedCall[V2CreateElicitationRequest, V2CreateElicitationResponse, CreateElicitationResponse](ctx, &a.conn, MethodElicitationCreate, req)
		return resp, err
	}
	return call[CreateElicitationResponse](ctx, &a.conn, MethodElicitationCreate, req)
}

// CompleteElicitation sends the elicitation/complete notification.
func (a *AgentConn) CompleteElicitation(ctx context.Context, n *CompleteElicitationNotification) error {
	return a.rpc.Notify(ctx, MethodElicitationComplete, n)
}

// TerminalOutput sends terminal/output. TerminalHandle.Output is the usual way.
func (a *AgentConn) TerminalOutput(ctx context.Context, req *TerminalOutputRequest) (*TerminalOutputResponse, error) {
	return v1Call[TerminalOutputResponse](ctx, a, MethodTerminalOutput, req)
}

// WaitForTerminalExit sends terminal/wait_for_exit. If ctx ends first, the
// request is cancelled with $/cancel_request and ctx's error is returned; the
// command keeps running.
func (a *AgentConn) WaitForTerminalExit(ctx context.Context, req *WaitForTerminalExitRequest) (*WaitForTerminalExitResponse, error) {
	return v1Call[WaitForTerminalExitResponse](ctx, a, MethodTerminalWaitForExit, req)
}

// KillTerminal sends terminal/kill.
func (a *AgentConn) KillTerminal(ctx context.Context, req *KillTerminalRequest) (*KillTerminalResponse, error) {
	return v1Call[KillTerminalResponse](ctx, a, MethodTerminalKill, req)
}

// ReleaseTerminal sends terminal/release.
func (a *AgentConn) ReleaseTerminal(ctx context.Context, req *ReleaseTerminalRequest) (*ReleaseTerminalResponse, error) {
	return v1Call[ReleaseTerminalResponse](ctx, a, MethodTerminalRelease, req)
}
