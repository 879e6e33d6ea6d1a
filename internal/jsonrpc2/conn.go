package jsonrpc2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned (possibly wrapped) by calls on a connection that has ended.
var ErrClosed = errors.New("jsonrpc2: connection closed")

// Request is an incoming call or notification.
type Request struct {
	ID     ID // zero for a notification
	Method string
	Params json.RawMessage // nil when absent; else valid JSON, as the whole message was
	// Seq numbers the calls and notifications of a Conn in the order they were read, from 1.
	// Handlers run concurrently, so it is how one of them can tell that a notification was
	// sent after a call whose handler has not yet got as far as it (ACP's session/cancel
	// racing the session/prompt it cancels).
	Seq uint64
	// Attachment is the raw bytes the peer sent with the message (see Options.Attachments),
	// nil for none. It is the handler's to keep.
	Attachment []byte
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
	// MaxConcurrentCalls bounds the incoming calls whose handlers are running or waiting to
	// run; 0 means DefaultMaxConcurrentCalls, a negative value means no bound. At the bound
	// the reader stops reading until a handler finishes, so a peer that sends calls faster
	// than they are served is slowed down instead of making us start a goroutine per call.
	// A handler holds its place until its reply is queued (or written, when it writes it
	// itself: see the package doc), except while it waits in a Call
	// or Notify on this Conn made with its own ctx: the response it waits for must still be
	// read. So the bound can be briefly exceeded by handlers coming back from such a Call;
	// the reader then waits until the count is below the bound again.
	MaxConcurrentCalls int
	// MaxQueuedBytes bounds each of the two queues a peer can fill: encoded outgoing messages
	// waiting to be written, and incoming notifications (and calls and responses) waiting
	// for the ones before them to be handled, each counted as its line plus a little. 0
	// means DefaultMaxQueuedBytes. Past it the reader stops reading, and a reply, Call or
	// Notify waits before encoding its message; one message larger than the bound still
	// goes through, so the queue holds at most the bound plus one message.
	MaxQueuedBytes int
	// StallTimeout is how long the peer may leave our output unread while we have a
	// message to write before the connection fails with an error wrapping ErrPeerStalled:
	// such a peer holds our queued messages, and the handlers waiting behind them,
	// forever. 0 means DefaultStallTimeout; a negative value means never.
	StallTimeout time.Duration
	// ToWireError turns a handler's error into the error object sent back. Nil, or a nil return,
	// means: a wrapped *Error is sent as is, anything else is -32603 with err.Error() as message.
	// Either way a call cancelled by $/cancel_request whose handler returns context.Canceled is
	// answered -32800 without consulting it.
	ToWireError func(error) *Error
	// DrainTimeout is how long the calls already read when input ends are still served:
	// queued ones are started (within MaxConcurrentCalls), running ones keep a live ctx,
	// their replies and notifications are written, and Done waits until the last reply is
	// written (at most StallTimeout for a peer that stops reading), so that a peer which
	// writes its requests and closes its end (a file of requests piped in) gets every
	// answer, even from a host that closes the connection at Done. Past it, or at once
	// when a write fails, the remaining handlers' contexts are cancelled and their replies
	// dropped, as at Close. Zero or negative means no drain: at the end of input every
	// handler's ctx is cancelled at once, queued calls are dropped and no reply is sent,
	// which suits a peer whose end of output means it has gone.
	DrainTimeout time.Duration
	// Logf reports problems that have no caller to return them to; nil discards them.
	Logf func(format string, args ...any)
	// OnBadMessage, if set, is told of each incoming line that is not a usable JSON-RPC
	// message (unparsable, invalid, over MaxMessageSize, or ignored), with the reason, so a
	// host can count them (a peer writing garbage) without parsing log text.
	OnBadMessage func(reason string)
	// Attachments lets the peer send raw bytes with a message (see NotifyAppend): bulk data
	// that JSON would have to escape or encode, and scan, on both sides. Off, the frame that
	// carries them is an unparsable line, as to any JSON-RPC peer. Each attachment counts
	// against MaxMessageSize and, queued, against MaxQueuedBytes.
	Attachments bool
	// NewAttachment, if set, returns the buffer an attachment of size bytes is read into
	// (len(buf) == size), so that a handler can recycle buffers it is done with; nil means
	// make. What is read into it goes to the handler, as Request.Attachment, or, when the
	// message that follows cannot be handled, nowhere.
	NewAttachment func(size int) []byte
}

// Defaults of Options.
const (
	// DefaultMaxConcurrentCalls leaves room for an agent's legitimate parallelism (tool
	// calls each waiting for a terminal, a permission prompt) with a wide margin, while
	// keeping a flood of calls to a few dozen goroutines and their results.
	DefaultMaxConcurrentCalls = 64
	// DefaultMaxQueuedBytes is half DefaultMaxMessageSize: enough to keep a few large
	// terminal/output results in flight, small enough that the queues stay well below
	// what a flooding peer could otherwise pile up.
	DefaultMaxQueuedBytes = 32 << 20
	// DefaultStallTimeout is long enough for a busy peer to get back to its input, and
	// short enough that a hung one is reported while the user is still watching.
	DefaultStallTimeout = 30 * time.Second
)

// ErrPeerStalled is wrapped by the error that ends a connection whose peer stopped reading
// its input (see Options.StallTimeout); Wait returns it, and Calls then fail with an error
// wrapping both it and ErrClosed.
var ErrPeerStalled = errors.New("the peer stopped reading its input")

// Conn is one JSON-RPC connection. Its methods are safe for concurrent use.
//
// When input ends, the notifications and responses that arrived before the end are still
// handled and delivered, in order; Calls left without a response then fail with ErrClosed, and
// new Calls fail at once. With Options.DrainTimeout the calls read before the end are then
// served and answered; without it, every handler's ctx is cancelled and replies are no longer
// sent.
//
// A notification handler that makes a Call must pass its own ctx (or one derived from it): the
// response to that Call arrived after the notification being handled, and is otherwise held
// back until that handler returns, which it never would.
type Conn struct {
	r         io.Reader
	w         io.Writer
	h         Handler
	maxSize   int
	maxCalls  int   // < 0: no bound
	maxQueued int64 // for both queues
	stall     time.Duration
	drain     time.Duration // > 0: serve the calls read before the end of input (Options.DrainTimeout)
	toWire    func(error) *Error
	logfFunc  func(format string, args ...any)
	onBad     func(reason string)
	attach    bool
	newAttach func(int) []byte

	ctx       context.Context // parent of every handler ctx; cancelled at end of input or Close
	cancel    context.CancelFunc
	notifyCtx context.Context // ctx of notification handlers, marked so their Calls skip the queue

	nextID  atomic.Int64
	seq     uint64      // the reader's: the last Request.Seq given
	closing atomic.Bool // Close was called

	mu      sync.Mutex
	stopped bool  // input ended (and any drain with it) or Close was called: no new Calls, no more replies
	failure error // what ended the connection from inside (a stalled peer), if anything
	// inputEnded: no response can arrive any more, so no new Calls (while draining).
	inputEnded bool
	// answering counts the incoming calls read and not yet answered (reply queued or
	// written, or dropped); drainKick wakes a draining reader when it falls.
	answering int
	drainKick chan struct{}
	pending   map[int64]*pendingCall
	inflight  map[string]*inflightCall

	// Flow control (flow.go). running: incoming calls holding a place under maxCalls.
	smu     sync.Mutex
	running int
	rkick   chan struct{} // wakes the reader when it may go on: a place, or queue room

	// The writer (writer.go): outgoing messages in order, cancellations first.
	oqmu       sync.Mutex
	oq         []*outgoing
	oqBytes    int64       // encoded bytes in oq, and of the messages being written
	cancels    []int64     // $/cancel_request ids to write before any other message
	writing    bool        // the writer, or a handler writing its reply, is writing: nobody else may
	batch      []*outgoing // the writer's: the messages of one Write
	joined     []byte      // the writer's: the bytes of several small messages, for one Write
	wstopped   bool        // the writer has stopped; sends fail at once
	wkick      chan struct{}
	wdone      chan struct{} // closed when the writer stops
	turn       chan struct{} // held while waiting for room in oq, encoding and queueing
	budgetKick chan struct{} // wakes the holder of turn when oq shrinks
	werr       error         // the writer's: sticky after a failed write
	lostErr    error         // the writer's: a write that failed before Close; Close reports it
	wfailed    atomic.Bool   // a write failed: werr is set and nothing more will be written
	stallTimer *time.Timer   // the writer's: fires when one write is blocked for stall
	stallFired chan struct{} // closed when the stall timer's function has returned
	onQueued   func()        // tests: called when send has queued a message

	// The ordered queue: notifications, and the calls and responses that must wait for the
	// notifications before them. busy: the worker is handling an item.
	qmu           sync.Mutex
	queue         []queued
	qBytes        int64 // the sizes of the queued items (queuedCost)
	busy          bool
	notifyWaiting int // Calls in flight made with notifyCtx
	kick          chan struct{}

	wg        sync.WaitGroup // reader, worker and call handlers
	done      chan struct{}  // closed when the reader returns
	readErr   error
	closeOnce sync.Once
	closeErr  error
	rOnce     sync.Once
	rErr      error
	wOnce     sync.Once
	wErr      error
}

type pendingCall struct {
	ch     chan response // buffered: exactly one response is ever sent
	direct bool          // made from a notification handler: deliver without waiting
	// delivered, if set, is called as a result is handed over, in order with notifications.
	delivered func(json.RawMessage)
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
	note   *Request      // a notification to handle
	call   *incomingCall // or a call to start
	resp   *response     // or a response to deliver to call respID
	respID int64
	eof    bool  // or the end of input
	size   int64 // what it counts against MaxQueuedBytes (queuedCost); 0 for eof
}

type notifyCtxKey struct{}

// NewConn starts serving the connection: it reads from r, writes to w, and hands incoming
// requests to h (nil answers every call with -32601). Close it to release its goroutines.
func NewConn(r io.Reader, w io.Writer, h Handler, opts *Options) *Conn {
	if opts == nil {
		opts = &Options{}
	}
	c := &Conn{
		r:          r,
		w:          w,
		h:          h,
		maxSize:    opts.MaxMessageSize,
		maxCalls:   opts.MaxConcurrentCalls,
		maxQueued:  int64(opts.MaxQueuedBytes),
		stall:      opts.StallTimeout,
		drain:      opts.DrainTimeout,
		toWire:     opts.ToWireError,
		logfFunc:   opts.Logf,
		onBad:      opts.OnBadMessage,
		attach:     opts.Attachments,
		newAttach:  opts.NewAttachment,
		pending:    make(map[int64]*pendingCall),
		inflight:   make(map[string]*inflightCall),
		kick:       make(chan struct{}, 1),
		rkick:      make(chan struct{}, 1),
		wkick:      make(chan struct{}, 1),
		wdone:      make(chan struct{}),
		turn:       make(chan struct{}, 1),
		budgetKick: make(chan struct{}, 1),
		drainKick:  make(chan struct{}, 1),
		stallFired: make(chan struct{}),
		done:       make(chan struct{}),
	}
	if c.maxSize <= 0 {
		c.maxSize = DefaultMaxMessageSize
	}
	if c.maxCalls == 0 {
		c.maxCalls = DefaultMaxConcurrentCalls
	}
	if c.maxQueued <= 0 {
		c.maxQueued = DefaultMaxQueuedBytes
	}
	if c.stall == 0 {
		c.stall = DefaultStallTimeout
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
// returns an error wrapping ErrClosed (and ErrPeerStalled when that is what ended it).
//
// A handler's Call with its own ctx gives up the handler's place under MaxConcurrentCalls
// until the response arrives, so calls waiting on the peer never keep the reader from
// reading that peer's responses.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallQueued(ctx, method, params, result, nil)
}

// CallQueued is Call, and calls queued, if not nil, once the request is queued to be
// written: a message sent after that is written after the request. ACP's session/cancel
// must not overtake the session/prompt it cancels.
func (c *Conn) CallQueued(ctx context.Context, method string, params, result any, queued func()) error {
	return c.CallOrdered(ctx, method, params, result, queued, nil)
}

// CallOrdered is CallQueued, and calls delivered, if not nil, with the result when a
// successful response is handed over: after every notification read before the response has
// been handled and before any read after it is, in the goroutine that handles them. It must not
// block, nor keep the result. ACP v2's session/prompt
// answer only acknowledges the prompt, and a client telling the state updates of its turn from
// earlier ones needs to know where the answer fell among them.
func (c *Conn) CallOrdered(ctx context.Context, method string, params, result any, queued func(), delivered func(result json.RawMessage)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := c.nextID.Add(1)
	p := &pendingCall{ch: make(chan response, 1), direct: ctx.Value(notifyCtxKey{}) == c, delivered: delivered}
	c.mu.Lock()
	if c.stopped || c.inputEnded {
		c.mu.Unlock()
		return c.closedErr()
	}
	c.pending[n] = p
	c.mu.Unlock()
	if s := c.slotOf(ctx); s != nil {
		c.suspend(s)
		defer c.resume(s)
	}
	if p.direct {
		c.notifyCallStarted()
		defer c.notifyCallEnded()
	}
	m, err := c.enqueue(ctx, sendCall, n, func() (*bytes.Buffer, error) {
		buf, err := encode(wireRequest{JSONRPC: "2.0", ID: Int64ID(n), Method: method, Params: params})
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
		}
		return buf, nil
	})
	if err != nil {
		c.forget(n) // never sent
		return err
	}
	if queued != nil {
		queued()
	}
	// A failed write comes as the response: waiting for the write as well
	// would cost a goroutine switch per call.
	select {
	case r := <-p.ch:
		if r.err != nil {
			return r.err
		}
		if result != nil {
			if err := unmarshalValid(r.result, result); err != nil {
				return fmt.Errorf("jsonrpc2: decoding %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		// Unless it was never written, the peer is told to stop.
		if c.forget(n) && !m.state.CompareAndSwap(outQueued, outDropped) {
			c.queueCancel(n)
		}
		return ctx.Err()
	}
}

// Notify sends a notification and returns once it is written. When ctx is done first it returns
// ctx.Err(), and the notification is not sent if it was still waiting to be written. Once input
// has ended (and the drain, if any: a draining handler may still notify) or Close was called, or
// after a failed write, it returns an error wrapping ErrClosed.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.isStopped() {
		return c.closedErr()
	}
	if s := c.slotOf(ctx); s != nil {
		// Waiting for the peer to read, like waiting for its response in Call.
		c.suspend(s)
		defer c.resume(s)
	}
	_, err := c.send(ctx, func() (*bytes.Buffer, error) {
		buf, err := encode(wireRequest{JSONRPC: "2.0", Method: method, Params: params})
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
		}
		return buf, nil
	})
	return err
}

// NotifyAppend is Notify for params that the caller encodes itself: appendParams appends them,
// one JSON value, to the message being built, which is sent as it is. Notify's params go
// through encoding/json, which scans a Marshaler's output again to check and compact it; a
// caller that sends many large notifications of one shape (a stream of output) saves that
// scan and a copy. It is the caller's to append valid JSON with no newline in it.
//
// attachment, when not nil, is sent with the message as raw bytes (Options.Attachments): as a
// line of "\x01" and the attachment's size in decimal, the attachment, then the message's
// line. Send one only to a peer that takes them: to any other, the size line is a malformed
// line and the attachment's bytes are lines like any other.
func (c *Conn) NotifyAppend(ctx context.Context, method string, appendParams func([]byte) []byte, attachment []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.isStopped() {
		return c.closedErr()
	}
	if s := c.slotOf(ctx); s != nil {
		c.suspend(s)
		defer c.resume(s)
	}
	_, err := c.send(ctx, func() (*bytes.Buffer, error) {
		name, err := json.Marshal(method)
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding method %q: %w", method, err)
		}
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		if attachment != nil {
			writeAttachment(buf, attachment)
		}
		buf.WriteString(`{"jsonrpc":"2.0","method":`)
		buf.Write(name)
		buf.WriteString(`,"params":`)
		buf.Write(appendParams(buf.AvailableBuffer()))
		buf.WriteString("}\n")
		return buf, nil
	})
	return err
}

// Close ends the connection: it closes r and w when they are io.Closers, cancels the contexts of
// handlers in flight, fails pending Calls with ErrClosed, and returns once every goroutine the Conn
// started has returned. So a handler that ignores its ctx delays Close, and a handler must not
// call Close itself. If r is not an io.Closer, or closing it does not interrupt a blocked Read (a
// blocking file descriptor such as a terminal), Close also waits for that Read to return.
// Close returns what went wrong on the way out: closing r or w failed, or a write failed before
// Close was called, so that the messages behind it never reached the peer. How the connection
// ended is Wait's to say. Close is idempotent; every call returns the result of the first.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.cancel()
		c.failPending()
		c.closeReader()
		c.closeWriter()
		c.wg.Wait()
		// The writer has returned (wg), so lostErr is settled.
		c.closeErr = errors.Join(c.lostErr, c.rErr, c.wErr)
	})
	return c.closeErr
}

// closeReader and closeWriter close r and w once, whether Close or a failure does it first.
func (c *Conn) closeReader() {
	if rc, ok := c.r.(io.Closer); ok {
		c.rOnce.Do(func() { c.rErr = rc.Close() })
	}
}

func (c *Conn) closeWriter() {
	if wc, ok := c.w.(io.Closer); ok && !SameStream(c.r, c.w) {
		c.wOnce.Do(func() { c.wErr = wc.Close() })
	}
}

// fail ends the connection because of err, seen from inside (a stalled peer): like the end of
// input, and r and w are closed so that a blocked Read or Write returns. Wait then returns err.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.failure == nil {
		c.failure = err
	}
	c.stopped = true
	c.mu.Unlock()
	c.logf("%v; closing the connection", err)
	c.cancel()
	c.failPending()
	c.closeReader()
	c.closeWriter()
}

// closedErr is the error for a call on a connection that has ended.
func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure != nil {
		return closedError{c.failure}
	}
	return ErrClosed
}

// closedError is ErrClosed with the failure that closed the connection, whose text says it all.
type closedError struct{ cause error }

func (e closedError) Error() string   { return e.cause.Error() + "; connection closed" }
func (e closedError) Unwrap() []error { return []error{ErrClosed, e.cause} }

// Done is closed when the connection has ended: the end of input (after the drain, with
// Options.DrainTimeout, and once the drain's replies are written), a read error, a stalled
// peer, or Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Wait waits for the reader to stop and for every goroutine the Conn started to return, and
// returns the error that ended the connection: nil for end of input or Close, an error
// wrapping ErrPeerStalled for a peer that stopped reading, else the read error.
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

// reply queues the response to call id: result, or e when e is not nil. It does not wait for
// the write: the bound on queued bytes is what holds up a handler whose peer does not read,
// and the handler's place under MaxConcurrentCalls is freed once its reply is queued. With
// direct (a handler's goroutine), it writes the reply itself when nothing is queued or being
// written, and returns once it is written; the reader never does, so that it goes on reading
// while the peer is slow to read.
func (c *Conn) reply(id ID, result any, e *Error, direct bool) {
	how := sendReply
	if direct {
		how = sendDirect
	}
	_, _ = c.enqueue(context.Background(), how, 0, func() (*bytes.Buffer, error) {
		if e == nil {
			buf, err := encode(wireResult{JSONRPC: "2.0", ID: id, Result: result})
			if err == nil {
				return buf, nil
			}
			c.logf("jsonrpc2: encoding the result for call %s: %v", id, err)
			e = &Error{Code: CodeInternalError, Message: "encoding the result: " + err.Error()}
		}
		buf, err := encode(wireError{JSONRPC: "2.0", ID: id, Error: e})
		if err != nil {
			// Only Data can fail to encode; send the rest.
			c.logf("jsonrpc2: encoding the error for call %s: %v", id, err)
			return encode(wireError{JSONRPC: "2.0", ID: id, Error: &Error{Code: e.Code, Message: e.Message}})
		}
		return buf, nil
	})
}

func (c *Conn) replyError(id ID, e *Error) { c.reply(id, nil, e, false) }
