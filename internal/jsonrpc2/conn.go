package jsonrpc2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned (possibly wrapped) by calls on a connection that has ended.
var ErrClosed = errors.New("jsonrpc2: connection closed")

// Request is an incoming call or notification.
type Request struct {
	ID     ID // zero for a notification
	Method string
	Params json.RawMessage // nil when absent
}

// IsCall reports whether the request expects a response.
func (r *Request) IsCall() bool { return r.ID.IsValid() }

// Handler serves incoming requests.
type Handler interface {
	// Handle serves one incoming request or notification. For a notification the result is ignored.
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Options configure a Conn; a nil *Options means all defaults.
type Options struct {
	// MaxMessageSize is the most bytes one incoming line may hold; 0 means DefaultMaxMessageSize.
	MaxMessageSize int
	// ToWireError turns a handler's error into the error object sent back. Nil, or a nil return,
	// means: a wrapped *Error is sent as is, anything else is -32603 with err.Error() as message.
	// Either way a call cancelled by $/cancel_request whose handler returns context.Canceled is
	// answered -32800 without consulting it.
	ToWireError func(error) *Error
	// Logf reports problems that have no caller to return them to; nil discards them.
	Logf func(format string, args ...any)
	// OnBadMessage, if set, is told of each incoming line that is not a usable JSON-RPC
	// message (unparsable, invalid, over MaxMessageSize, or ignored), with the reason, so a
	// host can count them (a peer writing garbage) without parsing log text.
	OnBadMessage func(reason string)
}

// Conn is one JSON-RPC connection. Its methods are safe for concurrent use.
//
// When input ends, every handler's ctx is cancelled and replies are no longer sent. The
// notifications and responses that arrived before the end are still handled and delivered, in
// order; Calls left without a response then fail with ErrClosed.
//
// A notification handler that makes a Call must pass its own ctx (or one derived from it): the
// response to that Call arrived after the notification being handled, and is otherwise held
// back until that handler returns, which it never would.
type Conn struct {
	r        io.Reader
	w        io.Writer
	h        Handler
	maxSize  int
	toWire   func(error) *Error
	logfFunc func(format string, args ...any)
	onBad    func(reason string)

	ctx       context.Context // parent of every handler ctx; cancelled at end of input or Close
	cancel    context.CancelFunc
	notifyCtx context.Context // ctx of notification handlers, marked so their Calls skip the queue

	nextID  atomic.Int64
	closing atomic.Bool // Close was called

	mu       sync.Mutex
	stopped  bool // input ended or Close was called: no new Calls, no more replies
	pending  map[int64]*pendingCall
	inflight map[string]*inflightCall

	// The writer (writer.go): outgoing messages in order, cancellations first.
	oqmu     sync.Mutex
	oq       []*outgoing
	cancels  []int64 // $/cancel_request ids to write before any other message
	wstopped bool    // the writer has stopped; sends fail at once
	wkick    chan struct{}
	werr     error  // the writer's: sticky after a failed write
	onQueued func() // tests: called when send has queued a message

	// The ordered queue: notifications, and responses that must wait for the notifications
	// before them. busy: the worker is handling an item.
	qmu   sync.Mutex
	queue []queued
	busy  bool
	kick  chan struct{}

	wg        sync.WaitGroup // reader, worker and call handlers
	done      chan struct{}  // closed when the reader returns
	readErr   error
	closeOnce sync.Once
	closeErr  error
}

type pendingCall struct {
	ch     chan response // buffered: exactly one response is ever sent
	direct bool          // made from a notification handler: deliver without waiting
}

type response struct {
	result json.RawMessage
	err    error
}

type inflightCall struct {
	cancel    context.CancelFunc
	cancelled bool // by the peer's $/cancel_request
}

type queued struct {
	note   *Request  // a notification to handle
	resp   *response // or a response to deliver to call respID
	respID int64
	eof    bool // or the end of input
}

type notifyCtxKey struct{}

// NewConn starts serving the connection: it reads from r, writes to w, and hands incoming
// requests to h (nil answers every call with -32601). Close it to release its goroutines.
func NewConn(r io.Reader, w io.Writer, h Handler, opts *Options) *Conn {
	if opts == nil {
		opts = &Options{}
	}
	c := &Conn{
		r:        r,
		w:        w,
		h:        h,
		maxSize:  opts.MaxMessageSize,
		toWire:   opts.ToWireError,
		logfFunc: opts.Logf,
		onBad:    opts.OnBadMessage,
		pending:  make(map[int64]*pendingCall),
		inflight: make(map[string]*inflightCall),
		kick:     make(chan struct{}, 1),
		wkick:    make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if c.maxSize <= 0 {
		c.maxSize = DefaultMaxMessageSize
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.notifyCtx = context.WithValue(c.ctx, notifyCtxKey{}, c)
	c.wg.Add(3)
	go c.read()
	go c.work()
	go c.writeLoop()
	return c
}

// Call sends a request and waits for its response. result is a pointer to decode the result into,
// or nil. An error response is returned as *Error. When ctx is done first, Call returns ctx.Err():
// if the request was still waiting to be written it is never sent, otherwise $/cancel_request
// follows it and a response arriving later is dropped. So a peer that stops reading cannot hold
// a Call beyond its ctx. Once input has ended or Close was called, or after a failed write, it
// returns an error wrapping ErrClosed.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := c.nextID.Add(1)
	buf, err := encode(wireRequest{JSONRPC: "2.0", ID: Int64ID(n), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
	}
	p := &pendingCall{ch: make(chan response, 1), direct: ctx.Value(notifyCtxKey{}) == c}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		putBuf(buf)
		return ErrClosed
	}
	c.pending[n] = p
	c.mu.Unlock()
	if maybeSent, err := c.send(ctx, buf); err != nil {
		if c.forget(n) && maybeSent && ctx.Err() != nil {
			c.queueCancel(n)
		}
		return err
	}
	select {
	case r := <-p.ch:
		if r.err != nil {
			return r.err
		}
		if result != nil {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("jsonrpc2: decoding %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		if c.forget(n) {
			c.queueCancel(n)
		}
		return ctx.Err()
	}
}

// Notify sends a notification and returns once it is written. When ctx is done first it returns
// ctx.Err(), and the notification is not sent if it was still waiting to be written. Once input
// has ended or Close was called, or after a failed write, it returns an error wrapping ErrClosed.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.isStopped() {
		return ErrClosed
	}
	buf, err := encode(wireRequest{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
	}
	_, err = c.send(ctx, buf)
	return err
}

// Close ends the connection: it closes r and w when they are io.Closers, cancels the contexts of
// handlers in flight, fails pending Calls with ErrClosed, and returns once every goroutine the Conn
// started has returned. So a handler that ignores its ctx delays Close, and a handler must not
// call Close itself. If r is not an io.Closer, or closing it does not interrupt a blocked Read (a
// blocking file descriptor such as a terminal), Close also waits for that Read to return.
// Close is idempotent; every call returns the result of the first.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.cancel()
		c.failPending()
		var errs []error
		if rc, ok := c.r.(io.Closer); ok {
			errs = append(errs, rc.Close())
		}
		if wc, ok := c.w.(io.Closer); ok && !sameValue(c.r, c.w) {
			errs = append(errs, wc.Close())
		}
		c.wg.Wait()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Done is closed when the reader has stopped: end of input, a read error, or Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Wait waits for the reader to stop and for every goroutine the Conn started to return, and
// returns the error that ended reading: nil for end of input or Close.
func (c *Conn) Wait() error {
	<-c.done
	c.wg.Wait()
	return c.readErr
}

// badMessage logs an unusable incoming line and tells OnBadMessage.
func (c *Conn) badMessage(verb, reason string) {
	c.logf("jsonrpc2: %s an incoming message: %s", verb, reason)
	if c.onBad != nil {
		c.onBad(reason)
	}
}

func (c *Conn) logf(format string, args ...any) {
	if c.logfFunc != nil {
		c.logfFunc(format, args...)
	}
}

func (c *Conn) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func (c *Conn) replyResult(id ID, result any) {
	buf, err := encode(wireResult{JSONRPC: "2.0", ID: id, Result: result})
	if err != nil {
		c.logf("jsonrpc2: encoding the result for call %s: %v", id, err)
		c.replyError(id, &Error{Code: CodeInternalError, Message: "encoding the result: " + err.Error()})
		return
	}
	c.reply(buf)
}

func (c *Conn) replyError(id ID, e *Error) {
	buf, err := encode(wireError{JSONRPC: "2.0", ID: id, Error: e})
	if err != nil {
		// Only Data can fail to encode; send the rest.
		c.logf("jsonrpc2: encoding the error for call %s: %v", id, err)
		buf, err = encode(wireError{JSONRPC: "2.0", ID: id, Error: &Error{Code: e.Code, Message: e.Message}})
		if err != nil {
			return
		}
	}
	c.reply(buf)
}

// reply sends a response and waits until it is written (or the writer
// stops), so that a peer that does not read holds up the handlers whose
// replies it does not take rather than growing a queue.
func (c *Conn) reply(buf *bytes.Buffer) {
	_, _ = c.send(context.Background(), buf)
}

// sameValue reports whether r and w are one object, so Close closes it once.
func sameValue(a, b any) bool {
	t := reflect.TypeOf(a)
	return t != nil && t == reflect.TypeOf(b) && t.Comparable() && a == b
}
