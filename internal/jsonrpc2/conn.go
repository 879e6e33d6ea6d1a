package jsonrpc2

import (
	"context"
	"encoding/json"
	"errors"
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
	// inputEnded, for tests, is called once the end of input has been seen and no new
	// Call can begin (the drain has started).
	inputEnded func()
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
	r          io.Reader
	w          io.Writer
	h          Handler
	maxSize    int
	maxCalls   int   // < 0: no bound
	maxQueued  int64 // for both queues
	stall      time.Duration
	drain      time.Duration // > 0: serve the calls read before the end of input (Options.DrainTimeout)
	onInputEnd func()        // Options.inputEnded
	toWire     func(error) *Error
	logfFunc   func(format string, args ...any)
	onBad      func(reason string)
	attach     bool
	newAttach  func(int) []byte

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
		onInputEnd: opts.inputEnded,
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
