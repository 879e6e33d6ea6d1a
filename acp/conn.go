package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// ErrPeerStalled is wrapped by the error that ends a connection whose peer
// stopped reading its input for ConnOptions.StallTimeout while we had
// messages for it, such as "the peer stopped reading its input for 30s with
// 1048576 bytes queued" (after a "jsonrpc2: " prefix). Wait returns it; calls fail with an error wrapping
// both it and ErrConnClosed.
var ErrPeerStalled = jsonrpc2.ErrPeerStalled

// ProtocolVersion1 is the ACP protocol version this package speaks.
const ProtocolVersion1 ProtocolVersion = 1

// ConnOptions configures a connection. A nil *ConnOptions means defaults.
type ConnOptions struct {
	// MaxMessageSize bounds one incoming message (one line) in bytes.
	// Zero means 64 MiB. A longer line is discarded and answered with an
	// error; the connection goes on.
	MaxMessageSize int
	// MaxConcurrentCalls bounds the peer's requests being served at once.
	// Zero means 64; negative means no bound. At the bound acpterm stops
	// reading from the peer until one finishes. A handler waiting in a
	// call to the peer (an agent's session/prompt asking for permission)
	// does not count while it waits.
	MaxConcurrentCalls int
	// MaxQueuedBytes bounds the messages waiting to be written to the peer,
	// and separately the incoming messages waiting for the notifications
	// before them to be handled. Zero means
	// 32 MiB. Past it the connection stops reading and replies wait; one
	// larger message still goes through alone.
	MaxQueuedBytes int
	// StallTimeout is how long the peer may leave its input unread while we
	// have a message for it. Past it the connection ends, Wait returns an
	// error wrapping ErrPeerStalled and calls fail with it. Zero means 30 s;
	// negative means never.
	StallTimeout time.Duration
	// Logf receives problems that have no caller to report to: a malformed
	// line, a failing notification handler. Nil discards them.
	Logf func(format string, args ...any)
	// OnBadMessage, if set, is told of each incoming line that is not a
	// usable JSON-RPC message, with the reason: a peer writing something
	// other than ACP to its stdout shows up here.
	OnBadMessage func(reason string)
	// Contain, for StartAgent only, keeps everything the agent starts
	// within reach of ClientConn.Kill and Close: the agent leads its own
	// process group and, on Linux, runs in a cgroup v2 of its own when the
	// tree is writable, which takes setsid daemons too; it also dies with
	// the calling process (PR_SET_PDEATHSIG). See StartAgent.
	Contain bool
	// TerminateDuration, for StartAgent only, is how long ClientConn.Close
	// waits for the agent to exit after closing its stdin, and again after
	// SIGTERM (unless TermWait says otherwise), before it sends the next
	// signal. Zero or negative means 2 s.
	TerminateDuration time.Duration
	// TermWait, for StartAgent only, is how long ClientConn.Close waits
	// after SIGTERM before it sends SIGKILL. Zero or negative means
	// TerminateDuration: a client that gives an agent little time once its
	// stdin is closed (agents that only stop on SIGTERM) can still give it
	// time to clean up on SIGTERM.
	TermWait time.Duration
	// DrainTimeout, for an AgentConn only, is how long the requests the
	// client sent before it ended its input (closed the agent's stdin) are
	// still served: queued ones are run, running ones keep their ctx, and
	// their answers and updates are written before the connection ends
	// (Done, Wait, ServeAgent's return), so `agent < requests.jsonl`
	// answers every request. Calls to the client fail at once meanwhile:
	// no answer can come. Past the timeout, or as soon as a write fails,
	// the handlers still running have their ctx cancelled and their
	// answers are dropped. Zero means 10 s; negative means no drain: the
	// handlers' contexts are cancelled at the end of input and nothing
	// more is answered. On a v2 connection a turn that goes on after its
	// session/prompt was acknowledged is waited for the same way, up to
	// its idle state update. A ClientConn never drains: an agent whose output
	// ended has gone, and serving its queued terminal/create would start
	// commands for nobody.
	DrainTimeout time.Duration
	// SupersedePrompts, for an AgentConn only, makes a newer session/prompt
	// for a session whose Prompt is running supersede it: the running
	// Prompt's ctx is cancelled (context.Cause: ErrTurnSuperseded), it is
	// answered StopReasonCancelled, and the newer Prompt starts once it
	// has returned, so one Prompt runs per session at a time. Without it
	// both run and the Agent decides, refusing the newer one, say.
	SupersedePrompts bool
	// PromptCancelWait, for a ClientConn only, is how long Prompt waits
	// for the agent's answer once its ctx has ended and it has sent
	// session/cancel; past it the request is abandoned with
	// $/cancel_request. Zero means 5 s; negative means no session/cancel
	// at all: an ended ctx abandons the request at once, as for any call.
	PromptCancelWait time.Duration
	// OfferV2, for a ClientConn only, makes Initialize ask for ACP v2
	// (protocol version 2, in Preview) instead of 1. An agent that answers
	// 1 is spoken to in v1; one that answers 2 in v2, and then Prompt
	// returns when the turn's state_update says the session is idle, and
	// the v2-only calls (CancelTerminal, CancelToolCall, ResumeSessionV2)
	// work. See ClientConn.Initialize. v1 stays the default for now.
	OfferV2 bool
	// OnlyV2, with OfferV2, leaves out of the offer what it carries for
	// an agent that answers 1 (v1's clientCapabilities and clientInfo):
	// for a client that does not go on in v1. An agent on this SDK that
	// needs the client's terminals or fs answers 1 only when the offer
	// has them, so it answers 2 here. An agent that answers 1 anyway gets
	// a v1 connection without capabilities: check ProtocolVersion.
	OnlyV2 bool
	// HandlerWait, for StartAgent only, is how long ClientConn.Close waits
	// for request handlers to return once their contexts are cancelled;
	// past it Close reports ErrHandlersRunning and leaves them to finish on
	// their own. Zero or negative means 1 s.
	HandlerWait time.Duration
}

// DefaultDrainTimeout is ConnOptions.DrainTimeout's default: long enough
// for a turn's last tool call to finish and be reported, short enough that
// an agent whose client closed its stdin mid-turn exits while someone
// still waits for it (acpterm's own client signals it after 2 s anyway).
const DefaultDrainTimeout = 10 * time.Second

func (o *ConnOptions) rpcOptions(drain bool) *jsonrpc2.Options {
	ro := &jsonrpc2.Options{ToWireError: toRPCError}
	if drain {
		ro.DrainTimeout = DefaultDrainTimeout
		if o != nil && o.DrainTimeout != 0 {
			ro.DrainTimeout = o.DrainTimeout // negative: none
		}
	}
	if o != nil {
		ro.MaxMessageSize = o.MaxMessageSize
		ro.MaxConcurrentCalls = o.MaxConcurrentCalls
		ro.MaxQueuedBytes = o.MaxQueuedBytes
		ro.StallTimeout = o.StallTimeout
		ro.Logf = o.Logf
		ro.OnBadMessage = o.OnBadMessage
	}
	return ro
}

// DefaultPromptCancelWait is ConnOptions.PromptCancelWait's default: time
// for an agent to stop its model stream and kill its tool calls (a
// terminal's kill is SIGTERM, a grace, SIGKILL) and say so.
const DefaultPromptCancelWait = 5 * time.Second

func (o *ConnOptions) promptCancelWait() time.Duration {
	if o == nil || o.PromptCancelWait == 0 {
		return DefaultPromptCancelWait
	}
	return o.PromptCancelWait
}

func (o *ConnOptions) logf(format string, args ...any) {
	if o != nil && o.Logf != nil {
		o.Logf(format, args...)
	}
}

// conn is what both sides share: the engine and the generic call helpers.
type conn struct {
	rpc   *jsonrpc2.Conn
	opts  *ConnOptions
	ready chan struct{} // closed once the owning ClientConn or AgentConn is set up
}

// newConn starts the engine. Handlers wait until ready is closed, so the
// owner can finish building itself (and hand itself to its handler) before
// the first message is served.
// drain: serve the requests read before the end of input
// (ConnOptions.DrainTimeout).
func newConn(r io.Reader, w io.Writer, h jsonrpc2.HandlerFunc, opts *ConnOptions, drain bool) conn {
	ready := make(chan struct{})
	safe := func(ctx context.Context, req *jsonrpc2.Request) (res any, err error) {
		<-ready
		// A bug in one handler must not take the whole connection (and
		// with it the client or agent process) down: it becomes an
		// internal error for that request, and the stack goes to the log.
		defer func() {
			if p := recover(); p != nil {
				opts.logf("acp: handler for %s panicked: %v\n%s", req.Method, p, debug.Stack())
				res, err = nil, fmt.Errorf("%w: handler for %s panicked: %v", ErrInternal, req.Method, p)
			}
		}()
		return h(ctx, req)
	}
	return conn{rpc: jsonrpc2.NewConn(r, w, jsonrpc2.HandlerFunc(safe), opts.rpcOptions(drain)), opts: opts, ready: ready}
}

// Done is closed when the connection has ended.
func (c *conn) Done() <-chan struct{} { return c.rpc.Done() }

// Wait blocks until the connection has ended and every goroutine it started
// has returned. It returns the error that ended the connection, nil for a
// clean end; one wrapping ErrPeerStalled for a peer that stopped reading.
func (c *conn) Wait() error { return c.rpc.Wait() }

// ExtMethod calls an extension method; its name must start with "_".
func (c *conn) ExtMethod(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if !strings.HasPrefix(method, "_") {
		return nil, fmt.Errorf("acp: extension method %q must start with \"_\"", method)
	}
	var raw json.RawMessage
	if err := c.rpc.Call(ctx, method, params, &raw); err != nil {
		return nil, peerCallError(method, err)
	}
	return raw, nil
}

// ExtNotification sends an extension notification; its name must start with "_".
func (c *conn) ExtNotification(ctx context.Context, method string, params any) error {
	if !strings.HasPrefix(method, "_") {
		return fmt.Errorf("acp: extension notification %q must start with \"_\"", method)
	}
	return c.rpc.Notify(ctx, method, params)
}

// call sends one typed request and decodes its typed result. An empty or
// null result decodes to the zero response.
func call[Resp any](ctx context.Context, c *conn, method string, params any) (*Resp, error) {
	resp := new(Resp)
	if err := c.rpc.Call(ctx, method, params, resp); err != nil {
		return nil, peerCallError(method, err)
	}
	return resp, nil
}

// decodeParams decodes a request's params; absent or null params decode to
// the zero value. A decode failure is an invalid-params error. The engine
// hands over valid JSON only, so a generated type's UnmarshalJSON gets the
// params directly: json.Unmarshal would first check them again, a second
// scan of what may be megabytes.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var err error
	if u, ok := v.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(raw)
	} else {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	return nil
}

// serve decodes params, runs a typed handler and substitutes an empty
// response for a nil one, so the peer always receives an object.
func serve[Req, Resp any](ctx context.Context, req *jsonrpc2.Request, f func(context.Context, *Req) (*Resp, error)) (any, error) {
	p := new(Req)
	if err := decodeParams(req.Params, p); err != nil {
		return nil, err
	}
	return answer(f(ctx, p))
}

// answer is a typed handler's result as a call's: an empty response for a
// nil one, so the peer always receives an object.
func answer[Resp any](resp *Resp, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = new(Resp)
	}
	return resp, nil
}

// notify decodes a notification's params and runs its handler.
func notify[Req any](ctx context.Context, req *jsonrpc2.Request, f func(context.Context, *Req) error) (any, error) {
	p := new(Req)
	if err := decodeParams(req.Params, p); err != nil {
		return nil, err
	}
	return nil, f(context.WithValue(ctx, rawParamsKey{}, req.Params), p)
}

type rawParamsKey struct{}

// RawParams returns, in a notification handler's ctx, the notification's
// params exactly as the peer sent them (nil when there were none), and nil
// in any other ctx. A host that logs or forwards messages can use them
// verbatim instead of encoding the decoded value again, which for a large
// message costs several times its size. The bytes must not be modified.
func RawParams(ctx context.Context) json.RawMessage {
	raw, _ := ctx.Value(rawParamsKey{}).(json.RawMessage)
	return raw
}

// serveExt routes an extension method or notification, or reports that the
// method is unknown. Unknown notifications are not errors.
func serveExt(ctx context.Context, h any, req *jsonrpc2.Request) (any, error) {
	ext, ok := h.(ExtHandler)
	if ok && strings.HasPrefix(req.Method, "_") {
		if !req.IsCall() {
			return nil, ext.ExtNotification(ctx, req.Method, req.Params)
		}
		res, err := ext.ExtMethod(ctx, req.Method, req.Params)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = json.RawMessage("{}")
		}
		return res, nil
	}
	if !req.IsCall() {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrMethodNotFound, req.Method)
}

// unsupported reports a known method whose optional interface the handler
// does not implement.
func unsupported(method string) error {
	return fmt.Errorf("%w: %s is not supported by this peer", ErrMethodNotFound, method)
}
