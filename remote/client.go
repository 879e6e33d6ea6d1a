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
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
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
	// Window is how far a lossless stream (SubscribeHeld,
	// CreateTerminalHeld) may run ahead of its slowest held subscriber:
	// the most output bytes of one terminal that each holds. 0 means
	// DefaultWindow.
	Window int
	// AskHost, when set, answers the target's questions about hosts
	// that are not on its list (an exec server started with
	// --allow-host, whose commands reach the network through its proxy):
	// the connection waits for the answer, at most
	// netproxy.DefaultAskTimeout. Everything in the question comes from
	// the target. nil: the target refuses those hosts at once.
	AskHost func(ctx context.Context, q netproxy.Question) netproxy.Decision
	// OnDeny, when set, is told of each connection the target's proxy
	// refused (NotifyNetworkDenied), in order with the terminals' events;
	// it must not block. Its words come from the target.
	OnDeny func(netproxy.Denial)
	// Decide approves each command before it is sent to the target, as
	// terminal.Policy.Decide does locally, with the Info the command will
	// run with (its cwd filled in, Where set); nil allows every command.
	Decide func(ctx context.Context, info terminal.Info) terminal.Decision
	// Where names the target in each terminal's Info.Where and in the
	// reason a terminal cut off by a lost connection gives (Event.Lost);
	// Connect sets it to the target. "" means "the target".
	Where string
	// Sandbox is what the target confines commands with, put in each
	// terminal's Info.Sandbox for its display; Connect sets it from the
	// hello. nil when commands are not confined.
	Sandbox *sandbox.Applied
	// PTY, when set, runs every terminal on a pseudo-terminal of this
	// size there (zero fields: the default size), as
	// terminal.Options.PTY does locally: a create whose _meta has no
	// terminal.MetaPTY of its own is sent with one. The target must be
	// a Linux one (HelloResponse.PTY); elsewhere such a create fails.
	PTY *terminal.Size
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

// Client is the acpterm side of an exec server: a terminal.Runtime whose
// commands run on the target. It has the method set of a local
// terminal.Manager's Runtime, so a client written against
// terminal.Runtime runs either way: it serves an agent's terminal calls
// (an acp.TerminalHandler, and nothing else: the target's fs methods are
// offered only through Files), and Subscribe and CreateTerminalHeld give
// the live output as locally. Its methods are safe for concurrent use.
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

	mu       sync.Mutex
	subs     []*Subscription
	flows    map[string]*flow         // the lossless streams, by terminal key
	grants   map[string]*flow         // the flows whose taken is to be sent
	failed   error                    // why the connection was given up, from our side
	owned                             // the terminals this client created
	cwds     map[acp.SessionID]string // the sessions' cwds, for Decide
	sessions map[acp.SessionID]bool   // the sessions with terminals, for Close
	killed   bool                     // KillAll ended the connection
	closing  bool                     // Close has begun: the end is no news

	where     string
	applied   *sandbox.Applied
	decide    func(context.Context, terminal.Info) terminal.Decision
	askHost   func(context.Context, netproxy.Question) netproxy.Decision
	onDeny    func(netproxy.Denial)
	pty       *terminal.Size // ClientOptions.PTY
	installed *Installed     // set by Connect
	tags      atomic.Uint64  // numbers the creates
	changed   chan struct{}  // kicked when a terminal is released

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
		logf: opts.Logf, owned: newOwned(), cwds: map[acp.SessionID]string{}, sessions: map[acp.SessionID]bool{},
		where: opts.Where, applied: opts.Sandbox, decide: opts.Decide, askHost: opts.AskHost, onDeny: opts.OnDeny, changed: make(chan struct{}, 1)}
	if opts.PTY != nil {
		size := *opts.PTY
		c.pty = &size
	}
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
		// The server calls only MethodAskHost, and only when asked to;
		// any other call from it is refused.
		MaxConcurrentCalls: 4,
		Attachments:        !opts.JSONOutput,
		NewAttachment:      newAttachment,
	})
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		<-c.conn.Done()
		// Every notification read is handled before the terminals left
		// are ended for the subscriptions.
		_ = c.conn.Wait()
		c.endGrants()
		c.mu.Lock()
		c.cutOffLocked()
		c.mu.Unlock()
		c.endSubscriptions()
		close(c.done)
	}()
	go func() {
		defer c.wg.Done()
		c.sendGrants()
	}()
	err := c.conn.Call(ctx, MethodHello, &HelloRequest{ProtocolVersion: ProtocolVersion, Client: opts.Name, Attachments: !opts.JSONOutput, AskHosts: opts.AskHost != nil, Denials: opts.OnDeny != nil}, &c.hello)
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

// Err is why the connection ended (nil while it lasts, or when Close
// ended it).
func (c *Client) Err() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil
	}
	return c.endErr()
}

// Close releases the terminals this client created (as
// terminal.Manager.Close does: SIGTERM, the kill grace, SIGKILL, on the
// target), waits a little for their last events, then ends the
// connection (the server then kills whatever is left and exits) and
// joins the client's goroutines. The subscriptions end after the events
// already queued, with an EventReleased for every terminal (Event.Lost
// says so of one cut off), then ErrSubscriptionClosed. Each release is
// bounded (15 s a session, then 2 s for the last events), so a stalled
// transport delays Close, never holds it. Idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		killed := c.killed
		c.closing = true
		c.mu.Unlock()
		if !killed {
			c.releaseAll()
		}
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
				return &serverError{e: e, kind: kind, stdinClosed: d.StdinClosed, written: d.Written}
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
	// stdinClosed: the failure was a write to a closed stdin
	// (terminal.ErrStdinClosed); written is what went in first.
	stdinClosed bool
	written     int
}

func (e *serverError) Error() string { return e.e.Message }
func (e *serverError) Unwrap() []error {
	if e.stdinClosed {
		return []error{e.e, e.kind, terminal.ErrStdinClosed}
	}
	return []error{e.e, e.kind}
}

func (c *Client) call(ctx context.Context, method string, params, result any) error {
	err := c.conn.Call(ctx, method, params, result)
	if err != nil {
		return c.callErr(err)
	}
	c.seen()
	return nil
}
