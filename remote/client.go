package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/terminal"
)

// ErrDisconnected is wrapped by the error of every call, wait and
// subscription once the connection to the exec server is gone: the
// transport dropped (ssh exited, the container went away), the server
// stopped reading (a stalled transport) or stopped answering pings. The
// server has then killed every command it ran for this client.
var ErrDisconnected = errors.New("remote: the connection to the exec server was lost")

// ClientOptions configure NewClient. A nil *ClientOptions or zero fields
// mean the defaults.
type ClientOptions struct {
	// Name is sent in the hello, for the server's logs.
	Name string
	// MaxMessageSize bounds one message from the server; 0 means 64 MiB
	// (a terminal/output answer may carry up to 24 MiB of encoded text).
	MaxMessageSize int
	// StallTimeout is how long the server may leave our messages unread;
	// 0 means jsonrpc2's default (30 s).
	StallTimeout time.Duration
	// KeepAlive is how often the client pings an otherwise quiet server;
	// 0 means DefaultKeepAlive, negative means never.
	KeepAlive time.Duration
	// KeepAliveTimeout is how long the server may send nothing at all,
	// while a ping waits for its answer, before the connection is given
	// up (ErrDisconnected); 0 means DefaultKeepAliveTimeout.
	KeepAliveTimeout time.Duration
	// SubscriberBuffer bounds the output bytes queued for one Subscription;
	// 0 means terminal.DefaultSubscriberBuffer.
	SubscriberBuffer int
	// JSONOutput asks the server for output in JSON members (text or
	// base64) instead of raw attachments: slower, but then every line on
	// the wire is JSON, for a transcript or a proxy that reads it.
	JSONOutput bool
	// Window is how far a lossless stream (SubscribeLossless) may run
	// ahead of its slowest lossless subscriber: the most output bytes of
	// one terminal that each holds. 0 means DefaultWindow.
	Window int
	// Logf reports problems that have no caller; nil discards them.
	Logf func(format string, args ...any)
}

// Defaults of ClientOptions.
const (
	DefaultKeepAlive        = 15 * time.Second
	DefaultKeepAliveTimeout = 30 * time.Second
	DefaultWindow           = 4 << 20
	defaultClientMaxMessage = 64 << 20
)

// Client is the acpterm side of an exec server. Its terminal methods are
// shaped like terminal.Manager's ACP-facing ones, so it serves an agent's
// terminal calls wherever a Manager would (it is an acp.TerminalHandler),
// and Subscribe gives the live output like Manager.Subscribe. Its methods
// are safe for concurrent use.
type Client struct {
	conn   *jsonrpc2.Conn
	rw     io.ReadWriteCloser
	hello  HelloResponse
	limit  int
	window uint64

	lastSeen atomic.Int64 // unix nanos of the last message from the server
	inHello  atomic.Bool  // the hello is on its way
	preHello atomic.Int32 // problems of the connection meanwhile

	logf func(format string, args ...any) // ClientOptions.Logf, never nil

	mu     sync.Mutex
	subs   []*Subscription
	flows  map[string]*flow // the lossless streams, by terminal key
	grants map[string]*flow // the flows whose taken is to be sent
	failed error            // why the connection was given up, from our side
	owned                   // the terminals this client created

	grantKick chan struct{}
	grantCtx  context.Context // of the grants' sends: ends with the connection or at Close
	endGrants context.CancelFunc
	stopKeep  chan struct{}
	done      chan struct{} // closed once the connection has ended and subscribers are told
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var _ acp.TerminalHandler = (*Client)(nil)

// NewClient starts the client on rw (usually the stdio of the transport's
// process, see Dial) and makes the hello exchange, bounded by ctx. On
// error rw is closed.
func NewClient(ctx context.Context, rw io.ReadWriteCloser, opts *ClientOptions) (*Client, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	maxMsg := opts.MaxMessageSize
	if maxMsg <= 0 {
		maxMsg = defaultClientMaxMessage
	}
	c := &Client{rw: rw, limit: opts.SubscriberBuffer, window: uint64(opts.Window),
		flows: map[string]*flow{}, grants: map[string]*flow{}, grantKick: make(chan struct{}, 1),
		stopKeep: make(chan struct{}), done: make(chan struct{}),
		logf: opts.Logf, owned: newOwned()}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.limit <= 0 {
		c.limit = terminal.DefaultSubscriberBuffer
	}
	if opts.Window <= 0 {
		c.window = DefaultWindow
	}
	c.grantCtx, c.endGrants = context.WithCancel(context.Background())
	c.seen()
	c.inHello.Store(true) // before the reader starts
	c.conn = jsonrpc2.NewConn(rw, rw, jsonrpc2.HandlerFunc(c.handle), &jsonrpc2.Options{
		MaxMessageSize: maxMsg,
		StallTimeout:   opts.StallTimeout,
		// A target may print before the exec server starts (a greeting
		// from a shell start-up file): such lines are skipped, and
		// reported a few times at most.
		Logf: c.connLogf(boundedLogf(c.logf, maxLogged)),
		// The server calls nothing; a call from it is refused.
		MaxConcurrentCalls: 4,
		Attachments:        !opts.JSONOutput,
		NewAttachment:      newAttachment,
	})
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		<-c.conn.Done()
		c.endGrants()
		c.endSubscriptions()
		close(c.done)
	}()
	go func() {
		defer c.wg.Done()
		c.sendGrants()
	}()
	err := c.conn.Call(ctx, MethodHello, &HelloRequest{ProtocolVersion: ProtocolVersion, Client: opts.Name, Attachments: !opts.JSONOutput}, &c.hello)
	c.inHello.Store(false)
	if n := c.preHello.Load(); n > 0 {
		c.logf("skipped %d lines that the target wrote before the exec server's hello (a greeting from a shell start-up file, most likely)", n)
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("remote: hello: %w", c.callErr(err))
	}
	if c.hello.ProtocolVersion != ProtocolVersion {
		_ = c.Close()
		return nil, fmt.Errorf("remote: the exec server speaks protocol version %d, not %d", c.hello.ProtocolVersion, ProtocolVersion)
	}
	every, timeout := opts.KeepAlive, opts.KeepAliveTimeout
	if every == 0 {
		every = DefaultKeepAlive
	}
	if timeout <= 0 {
		timeout = DefaultKeepAliveTimeout
	}
	if every > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.keepAlive(every, timeout)
		}()
	}
	return c, nil
}

// Hello is the server's answer to the hello: its platform, default cwd,
// isolation and sandbox.
func (c *Client) Hello() HelloResponse { return c.hello }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it lasts, or after Close).
func (c *Client) Err() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	return c.endErr()
}

// Close ends the connection (the server then kills every command it
// runs for this client) and joins the client's goroutines. Idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.stopKeep)
		c.endGrants()
		c.closeErr = c.conn.Close()
		c.wg.Wait()
	})
	return c.closeErr
}

func (c *Client) seen() { c.lastSeen.Store(time.Now().UnixNano()) }

// keepAlive pings the server every interval. The connection is given up
// when a ping goes unanswered and nothing else arrived for timeout: a
// transport that stalls without closing would otherwise hold every
// waiter for ever.
func (c *Client) keepAlive(every, timeout time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stopKeep:
			return
		case <-c.conn.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := c.conn.Call(ctx, MethodPing, struct{}{}, nil)
		cancel()
		if err == nil {
			c.seen()
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) && time.Since(time.Unix(0, c.lastSeen.Load())) >= timeout {
			c.mu.Lock()
			c.failed = fmt.Errorf("the exec server sent nothing for %v", timeout)
			c.mu.Unlock()
			_ = c.rw.Close() // ends the reader, and with it every call
			return
		}
	}
}

// endErr is the error of everything still waiting once the connection
// has ended.
func (c *Client) endErr() error {
	c.mu.Lock()
	failed := c.failed
	c.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%w: %v", ErrDisconnected, failed)
	}
	if err := c.conn.Wait(); err != nil {
		return fmt.Errorf("%w: %v", ErrDisconnected, err)
	}
	return ErrDisconnected
}

// callErr turns a call's error into the client's vocabulary: a server's
// error answer becomes an *acp.Error with the server's code (and the
// terminal kind it names), the end of the connection ErrDisconnected.
func (c *Client) callErr(err error) error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		e := &acp.Error{Code: re.Code, Message: re.Message, Data: re.Data}
		var d errorData
		if re.Data != nil && json.Unmarshal(re.Data, &d) == nil {
			if kind := kindErr(d.Kind); kind != nil {
				return &serverError{e: e, kind: kind}
			}
		}
		return e
	}
	if errors.Is(err, jsonrpc2.ErrClosed) {
		select {
		case <-c.done:
			return c.endErr()
		case <-time.After(ShutdownBound):
			return fmt.Errorf("%w: %v", ErrDisconnected, err)
		}
	}
	return err
}

// serverError is a server's error answer for a terminal failure: it keeps
// the server's code (acp.WireError sends it on as it is) and matches the
// terminal kind under errors.Is.
type serverError struct {
	e    *acp.Error
	kind error
}

func (e *serverError) Error() string   { return e.e.Message }
func (e *serverError) Unwrap() []error { return []error{e.e, e.kind} }

func (c *Client) call(ctx context.Context, method string, params, result any) error {
	err := c.conn.Call(ctx, method, params, result)
	if err != nil {
		return c.callErr(err)
	}
	c.seen()
	return nil
}

// CreateTerminal runs a command on the target (terminal/create). While
// a lossless subscription covers the session, the terminal's stream is
// lossless (remote/create).
func (c *Client) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	var resp acp.CreateTerminalResponse
	var err error
	c.creating(req.SessionID)
	if c.holds(req.SessionID) {
		err = c.call(ctx, MethodCreate, &CreateRequest{Terminal: *req, Window: c.window}, &resp)
	} else {
		err = c.call(ctx, methodCreate, req, &resp)
	}
	c.created(req.SessionID, resp.TerminalID, err == nil)
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// TerminalOutput returns a terminal's output tail and, once it exited,
// its status (terminal/output).
func (c *Client) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	var resp acp.TerminalOutputResponse
	if err := c.call(ctx, methodOutput, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// WaitForTerminalExit waits for the command to exit
// (terminal/wait_for_exit). A cancelled ctx ends this wait only; a lost
// connection ends it with ErrDisconnected.
func (c *Client) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	var resp acp.WaitForTerminalExitResponse
	if err := c.call(ctx, methodWait, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// KillTerminal kills the command and keeps the terminal (terminal/kill).
func (c *Client) KillTerminal(ctx context.Context, req *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	var resp acp.KillTerminalResponse
	if err := c.call(ctx, methodKill, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// ReleaseTerminal kills what is left of the command and frees the
// terminal (terminal/release).
func (c *Client) ReleaseTerminal(ctx context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	var resp acp.ReleaseTerminalResponse
	if err := c.call(ctx, methodRelease, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// SetSessionCwd sets the target directory in which a session's terminals
// run when a create has none; "" forgets it.
func (c *Client) SetSessionCwd(ctx context.Context, sessionID acp.SessionID, dir string) error {
	return c.call(ctx, MethodSetSessionCwd, &SetSessionCwdRequest{SessionID: sessionID, Cwd: dir}, nil)
}

// ReleaseSession releases every terminal of a session on the target.
func (c *Client) ReleaseSession(ctx context.Context, sessionID acp.SessionID) error {
	return c.call(ctx, MethodReleaseSession, &ReleaseSessionRequest{SessionID: sessionID}, nil)
}

// Resume asks the server to replay a terminal's output from byte offset
// after, as far as it still retains it, and to stream on from there
// (remote/subscribe). Subscriptions see the replayed bytes that they had
// not received (by offset), counted in Event.Dropped no more.
//
// While a lossless subscription covers the session, the restarted stream
// is lossless.
func (c *Client) Resume(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, after uint64) error {
	req := &SubscribeRequest{SessionID: sessionID, TerminalID: terminalID, After: after}
	if c.holds(sessionID) {
		// Known before the call: the stream's output may come first.
		c.track(sessionID, terminalID, c.window, after)
		req.Window = c.window
	}
	return c.call(ctx, MethodSubscribe, req, nil)
}

// handle receives the server's notifications, in order, and hands them
// to the subscriptions without ever blocking.
func (c *Client) handle(_ context.Context, req *jsonrpc2.Request) (any, error) {
	c.seen()
	if req.IsCall() {
		return nil, fmt.Errorf("%w: %s", acp.ErrMethodNotFound, req.Method)
	}
	ev, ok := decodeEvent(req.Method, req.Params, req.Attachment)
	if att := req.Attachment; att != nil {
		if ok && ev.ev.Kind == terminal.EventOutput && len(ev.ev.Data) > 0 && &ev.ev.Data[0] == &att[0] {
			ev.chunk = &chunk{data: att}
			ev.chunk.refs.Store(1)
			defer ev.chunk.release() // after the deliveries, each of which holds it
		} else {
			recycle(att)
		}
	}
	if !ok || !c.admit(&ev) {
		return nil, nil
	}
	if ev.ev.Kind == terminal.EventCreated && ev.window > 0 {
		c.track(ev.ev.SessionID, ev.ev.TerminalID, ev.window, 0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[ev.key]
	if ev.ev.Kind == terminal.EventOutput && f != nil {
		ev.flow = f
		f.recv = max(f.recv, ev.offset+uint64(len(ev.ev.Data)))
	}
	overflowed := false
	for _, s := range c.subs {
		if s.deliver(ev) {
			overflowed = true
		}
	}
	switch {
	case overflowed:
		for _, f := range c.flows {
			c.checkFlowLocked(f)
		}
	case ev.ev.Kind == terminal.EventReleased:
		delete(c.flows, ev.key)
		delete(c.grants, ev.key)
	case ev.flow != nil:
		c.checkFlowLocked(f)
	}
	return nil, nil
}

// flow is the client's side of a lossless stream: what it received and
// what it told the server its subscribers have taken.
type flow struct {
	sid    acp.SessionID
	tid    acp.TerminalID
	key    string
	window uint64
	recv   uint64 // the end of the output received
	taken  uint64 // the last grant, sent or to be sent
}

// holds reports whether a lossless subscription covers the session.
func (c *Client) holds(sessionID acp.SessionID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if s.lossless && s.covers(sessionID) {
			return true
		}
	}
	return false
}

// track starts the accounting of a lossless stream whose output starts
// at offset from (a restart keeps what it had).
func (c *Client) track(sessionID acp.SessionID, terminalID acp.TerminalID, window, from uint64) {
	key := string(sessionID) + "\x00" + string(terminalID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flows[key]; f != nil {
		f.window = window
		return
	}
	if len(c.flows) >= maxTracked {
		return // a server making up terminals: they stream as lossy ones
	}
	c.flows[key] = &flow{sid: sessionID, tid: terminalID, key: key, window: window, recv: from, taken: from}
}

// taken re-examines a lossless stream after a subscriber took some of
// its output or went away.
func (c *Client) taken(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flows[key]; f != nil {
		c.checkFlowLocked(f)
	}
}

// checkFlowLocked grants the server room once the slowest lossless
// subscriber has taken a quarter of the window since the last grant:
// fewer, larger grants, and never a stall (a stream waiting for room has
// sent a whole window, which, once taken, is more than a quarter).
func (c *Client) checkFlowLocked(f *flow) {
	var backlog uint64
	for _, s := range c.subs {
		if s.lossless && s.covers(f.sid) {
			backlog = max(backlog, uint64(s.pending(f.key)))
		}
	}
	taken := f.recv - min(backlog, f.recv)
	if taken > f.taken && taken-f.taken >= max(f.window/4, 1) {
		f.taken = taken
		c.grants[f.key] = f
		select {
		case c.grantKick <- struct{}{}:
		default:
		}
	}
}

// sendGrants sends the grants, one notification per stream for all the
// takes since the last, until the connection ends.
func (c *Client) sendGrants() {
	ctx := c.grantCtx
	var gs []GrantNotification
	for {
		select {
		case <-c.grantKick:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		gs = gs[:0]
		for key, f := range c.grants {
			gs = append(gs, GrantNotification{SessionID: f.sid, TerminalID: f.tid, Taken: f.taken})
			delete(c.grants, key)
		}
		c.mu.Unlock()
		for i := range gs {
			if c.conn.Notify(ctx, NotifyGrant, &gs[i]) != nil {
				return
			}
		}
	}
}
