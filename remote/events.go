package remote

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// wireEvent is a notification decoded: the event and, for output, the
// offset of its first byte (for an exit, the total); for a start, the
// stream's window.
type wireEvent struct {
	ev     terminal.Event
	offset uint64
	window uint64
	tag    string // a start's: the create's CreateRequest.Tag
	key    string // the terminal's
	flow   *flow  // the terminal's lossless stream, for its output
	chunk  *chunk // the recycled buffer Data is in, if any
}

// Attached output is read into buffers of maxChunk bytes that come back
// once every subscription that queued a chunk has moved past it: a
// client taking hundreds of MiB a second would otherwise allocate as
// much, and spend more on the collector than on the bytes.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, maxChunk); return &b }}

// newAttachment is the connection's buffer for an attachment of n bytes.
func newAttachment(n int) []byte {
	if n > maxChunk {
		return make([]byte, n)
	}
	return (*chunkPool.Get().(*[]byte))[:n]
}

func recycle(b []byte) {
	if cap(b) == maxChunk {
		b = b[:maxChunk]
		chunkPool.Put(&b)
	}
}

// chunk is one attachment and the references to it: the delivery's own,
// and one per subscription that queued it or lent it out last.
type chunk struct {
	data []byte
	refs atomic.Int32
}

func (ch *chunk) hold() {
	if ch != nil {
		ch.refs.Add(1)
	}
}

func (ch *chunk) release() {
	if ch != nil && ch.refs.Add(-1) == 0 {
		recycle(ch.data)
	}
}

// decodeEvent decodes one of the stream notifications, and the output
// attached to one; ok is false for anything else or anything malformed
// (ignored: the server is trusted to speak the protocol, not to be
// unable to hurt us).
func decodeEvent(method string, params json.RawMessage, attachment []byte) (w wireEvent, ok bool) {
	switch method {
	case NotifyStarted:
		var n StartedNotification
		if json.Unmarshal(params, &n) != nil {
			return w, false
		}
		w.ev = terminal.Event{Kind: terminal.EventCreated, SessionID: n.SessionID, TerminalID: n.TerminalID,
			Info: &terminal.Info{SessionID: n.SessionID, TerminalID: n.TerminalID, Argv: n.Argv, Cwd: n.Cwd,
				PID: n.PID, OutputByteLimit: n.OutputByteLimit, Stdin: n.Stdin}}
		if n.PTY != nil {
			w.ev.Info.PTY = &terminal.Size{Cols: n.PTY.Cols, Rows: n.PTY.Rows}
		}
		w.window, w.tag = n.Window, n.Tag
	case NotifyOutput:
		// params is valid JSON (the connection checked the line): no
		// json.Unmarshal, which would check it again first.
		var n OutputNotification
		if n.UnmarshalJSON(params) != nil {
			return w, false
		}
		if n.Data == nil {
			n.Data = attachment
		}
		w.ev = terminal.Event{Kind: terminal.EventOutput, SessionID: n.SessionID, TerminalID: n.TerminalID, Data: n.Data}
		w.offset = n.Offset
	case NotifyExit:
		var n ExitNotification
		if json.Unmarshal(params, &n) != nil {
			return w, false
		}
		w.ev = terminal.Event{Kind: terminal.EventExited, SessionID: n.SessionID, TerminalID: n.TerminalID,
			Status: &n.ExitStatus, TimedOut: n.TimedOut}
		w.offset = n.Total
	case NotifyReleased:
		var n ReleasedNotification
		if json.Unmarshal(params, &n) != nil {
			return w, false
		}
		w.ev = terminal.Event{Kind: terminal.EventReleased, SessionID: n.SessionID, TerminalID: n.TerminalID}
	default:
		return w, false
	}
	w.key = string(w.ev.SessionID) + "\x00" + string(w.ev.TerminalID)
	return w, true
}

// maxTracked bounds the terminals one subscription keeps a cursor for,
// the non-output events it queues, and the lossless streams of a client.
const maxTracked = 1 << 16

// Subscription receives the events of the target's terminals, as
// terminal.Subscription does locally: Created, Output…, Exited, Released
// per terminal. Event.Data is valid until the next call to Next or
// Close (the subscription reuses the buffers output arrives in): copy
// what must be kept longer. Delivery never blocks the connection. An ordinary
// subscription drops output beyond its buffer (ClientOptions.SubscriberBuffer)
// and counts it in the Dropped of that terminal's next event, which also
// counts what the server's stream dropped. A lossless one
// (SubscribeHeld, CreateTerminalHeld) drops nothing of a lossless stream: the server
// sends no more than ClientOptions.Window bytes of a terminal ahead of
// what the subscription has taken, and holds the command meanwhile.
type Subscription struct {
	c         *Client
	sessionID acp.SessionID
	limit     int
	lossless  bool
	// tag, for CreateTerminalHeld's subscription, is its create's: it
	// covers the terminal whose start carries it (terminalID, once
	// known). wide: it covers every terminal of its session(s).
	tag  string
	wide bool

	mu         sync.Mutex
	q          []queuedEvent
	qBytes     int // output queued, of lossy streams
	nControl   int
	terminalID acp.TerminalID // the one terminal covered, or ""
	// replay: a subscription to one terminal takes nothing before the
	// start its replay begins with (what is still in flight of the
	// stream before it is in the replay too).
	replay bool
	exits  map[string]bool   // terminal keys whose exit was queued
	next   map[string]uint64 // terminal key -> offset of the next byte not yet queued
	pend   map[string]int    // terminal key -> output of its lossless stream queued
	lent   *chunk            // the buffer of the event Next returned last
	closed bool
	err    error
	wake   chan struct{}
}

type queuedEvent struct {
	ev    terminal.Event
	key   string
	held  bool // output of a lossless stream, counted in pend
	chunk *chunk
}

// covers reports whether the subscription receives the session's events.
func (s *Subscription) covers(sessionID acp.SessionID) bool {
	return s.sessionID == "" || s.sessionID == sessionID
}

// endErrLocked is endErr for a caller holding c.mu.
func (c *Client) endErrLocked() error {
	c.mu.Unlock()
	defer c.mu.Lock()
	return c.endErr()
}

// endSubscriptions ends every subscription after its queued events, with
// the connection's end as their error (ErrSubscriptionClosed after
// Close).
func (c *Client) endSubscriptions() {
	err := c.endErr()
	c.mu.Lock()
	if c.closing && !c.killed {
		// Close ended them, as terminal.Manager.Close ends its own.
		err = terminal.ErrSubscriptionClosed
	}
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for _, s := range subs {
		s.end(err)
	}
}

// deliver queues an event; the client holds c.mu, so that a lossless
// stream's accounting (flow) sees deliveries and takes in order. It
// reports whether the subscription overflowed: the lossless streams it
// held are then free.
func (s *Subscription) deliver(w wireEvent) (overflowed, finished bool) {
	ev, key := w.ev, w.key
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.wants(&w) {
		return false, false
	}
	next, known := s.next[key]
	if !known && len(s.next) >= maxTracked {
		s.overflow()
		return true, false
	}
	held := false
	switch ev.Kind {
	case terminal.EventOutput:
		end := w.offset + uint64(len(ev.Data))
		if end <= next {
			return false, false // replayed bytes this subscription already has
		}
		if w.offset < next {
			ev.Data = ev.Data[next-w.offset:]
		} else {
			ev.Dropped = w.offset - next
		}
		held = s.lossless && w.flow != nil
		// A lossless stream is bounded by its window, a server that
		// sends beyond it (twice, for slack) as any stream.
		if held && uint64(s.pend[key]+len(ev.Data)) > 2*w.flow.window || !held && s.qBytes+len(ev.Data) > s.limit {
			// Not queued: the cursor stays, and the gap is counted in
			// the next event that is.
			s.next[key] = next
			s.wakeUp()
			return false, false
		}
		s.next[key] = end
		if held {
			s.pend[key] += len(ev.Data)
		} else {
			s.qBytes += len(ev.Data)
		}
	case terminal.EventExited:
		if s.exits[key] {
			return false, false // a restarted stream's exit: queued already
		}
		s.exits[key] = true
		if w.offset > next {
			ev.Dropped = w.offset - next
			next = w.offset
		}
		s.next[key] = next
		s.nControl++
	case terminal.EventReleased:
		delete(s.next, key)
		delete(s.exits, key)
		s.nControl++
	default:
		s.next[key] = next
		s.nControl++
	}
	if s.nControl > maxTracked {
		s.overflow()
		return true, false
	}
	w.chunk.hold()
	s.q = append(s.q, queuedEvent{ev: ev, key: key, held: held, chunk: w.chunk})
	if ev.Kind == terminal.EventReleased && s.terminalID != "" && ev.Lost == "" {
		// A subscription to one terminal ends after its release (one
		// cut off by the connection's end ends with the connection).
		s.closed = true
		finished = true
	}
	s.wakeUp()
	return false, finished
}

// wants reports whether the subscription takes the event: it is open,
// covers the terminal, and has not had the event from a restarted
// stream already. s.mu is held.
func (s *Subscription) wants(w *wireEvent) bool {
	if s.closed || !s.admits(w) {
		return false
	}
	created := w.ev.Kind == terminal.EventCreated
	if s.replay {
		if !created {
			return false
		}
		s.replay = false
	}
	_, known := s.next[w.key]
	return !known || !created // a restarted stream's start: seen already
}

// pending is how much of a terminal's lossless stream the subscription
// holds; 0 for an ordinary subscription.
func (s *Subscription) pending(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pend[key]
}

// overflow closes a subscription that fell so far behind that even
// non-output events could not be kept.
func (s *Subscription) overflow() {
	s.closed, s.err = true, terminal.ErrSubscriberOverflow
	s.dropQueueLocked()
	s.next, s.pend = nil, nil
	s.wakeUp()
}

// dropQueueLocked empties the queue and gives back the buffers it held.
func (s *Subscription) dropQueueLocked() {
	for _, qe := range s.q {
		qe.chunk.release()
	}
	s.lent.release()
	s.q, s.lent, s.qBytes, s.nControl = nil, nil, 0, 0
}

func (s *Subscription) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event, waiting until ctx is done. Once the
// subscription is closed it returns what is queued, then
// terminal.ErrSubscriptionClosed (after Close), ErrDisconnected (the
// connection ended) or terminal.ErrSubscriberOverflow.
func (s *Subscription) Next(ctx context.Context) (terminal.Event, error) {
	for {
		s.mu.Lock()
		s.lent.release()
		s.lent = nil
		if len(s.q) > 0 {
			qe := s.q[0]
			s.q[0] = queuedEvent{}
			s.q = s.q[1:]
			s.lent = qe.chunk
			switch {
			case qe.held:
				if s.pend[qe.key] -= len(qe.ev.Data); s.pend[qe.key] <= 0 {
					delete(s.pend, qe.key)
				}
			case qe.ev.Kind == terminal.EventOutput:
				s.qBytes -= len(qe.ev.Data)
			default:
				s.nControl--
			}
			s.mu.Unlock()
			if qe.held {
				s.c.taken(qe.key)
			}
			return qe.ev, nil
		}
		if s.closed {
			err := s.err
			s.mu.Unlock()
			return terminal.Event{}, err
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return terminal.Event{}, ctx.Err()
		}
	}
}

// Close ends the subscription; queued events are discarded, and the
// lossless streams it held go on without it. Idempotent.
func (s *Subscription) Close() {
	c := s.c
	c.mu.Lock()
	for i, x := range c.subs {
		if x == s {
			subs := make([]*Subscription, 0, len(c.subs)-1)
			c.subs = append(append(subs, c.subs[:i]...), c.subs[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	s.mu.Lock()
	if !s.closed {
		s.closed, s.err = true, terminal.ErrSubscriptionClosed
	}
	s.dropQueueLocked()
	keys := s.pend
	s.pend = nil
	s.mu.Unlock()
	s.wakeUp()
	for key := range keys {
		c.taken(key)
	}
}

// end closes the subscription after its queued events.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	if !s.closed {
		s.closed, s.err = true, err
	}
	s.mu.Unlock()
	s.wakeUp()
}
