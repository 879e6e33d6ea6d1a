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
	// Logf reports problems that have no caller; nil discards them.
	Logf func(format string, args ...any)
}

// Defaults of ClientOptions.
const (
	DefaultKeepAlive        = 15 * time.Second
	DefaultKeepAliveTimeout = 30 * time.Second
	defaultClientMaxMessage = 64 << 20
)

// Client is the acpterm side of an exec server. Its terminal methods are
// shaped like terminal.Manager's ACP-facing ones, so it serves an agent's
// terminal calls wherever a Manager would (it is an acp.TerminalHandler),
// and Subscribe gives the live output like Manager.Subscribe. Its methods
// are safe for concurrent use.
type Client struct {
	conn  *jsonrpc2.Conn
	rw    io.ReadWriteCloser
	hello HelloResponse
	limit int

	lastSeen atomic.Int64 // unix nanos of the last message from the server

	mu     sync.Mutex
	subs   []*Subscription
	failed error // why the connection was given up, from our side

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
	c := &Client{rw: rw, limit: opts.SubscriberBuffer, stopKeep: make(chan struct{}), done: make(chan struct{})}
	if c.limit <= 0 {
		c.limit = terminal.DefaultSubscriberBuffer
	}
	c.seen()
	c.conn = jsonrpc2.NewConn(rw, rw, jsonrpc2.HandlerFunc(c.handle), &jsonrpc2.Options{
		MaxMessageSize: maxMsg,
		StallTimeout:   opts.StallTimeout,
		Logf:           opts.Logf,
		// The server calls nothing; a call from it is refused.
		MaxConcurrentCalls: 4,
	})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-c.conn.Done()
		c.endSubscriptions()
		close(c.done)
	}()
	err := c.conn.Call(ctx, MethodHello, &HelloRequest{ProtocolVersion: ProtocolVersion, Client: opts.Name}, &c.hello)
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

// CreateTerminal runs a command on the target (terminal/create).
func (c *Client) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	var resp acp.CreateTerminalResponse
	if err := c.call(ctx, methodCreate, req, &resp); err != nil {
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
func (c *Client) Resume(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, after uint64) error {
	return c.call(ctx, MethodSubscribe, &SubscribeRequest{SessionID: sessionID, TerminalID: terminalID, After: after}, nil)
}

// handle receives the server's notifications, in order, and hands them
// to the subscriptions without ever blocking.
func (c *Client) handle(_ context.Context, req *jsonrpc2.Request) (any, error) {
	c.seen()
	if req.IsCall() {
		return nil, fmt.Errorf("%w: %s", acp.ErrMethodNotFound, req.Method)
	}
	ev, ok := decodeEvent(req.Method, req.Params)
	if !ok {
		return nil, nil
	}
	c.mu.Lock()
	subs := c.subs
	c.mu.Unlock()
	for _, s := range subs {
		s.deliver(ev)
	}
	return nil, nil
}
