package terminal

import (
	"context"
	"errors"
	"github.com/acpterm/acpterm/acp"
	"sync"
	"time"
)

// EventKind says what happened to a terminal.
type EventKind uint8

const (
	// EventCreated: the command started. Event.Info describes it.
	EventCreated EventKind = iota + 1
	// EventOutput: the command wrote Event.Data (stdout and stderr, raw
	// bytes, in order).
	EventOutput
	// EventExited: the command's process exited and its output was
	// drained. Event.Status says how.
	EventExited
	// EventReleased: the terminal was released; its ID is gone from the
	// protocol, Snapshot still shows its final state for a while. Last
	// event of a terminal.
	EventReleased
)

func (k EventKind) String() string {
	switch k {
	case EventCreated:
		return "created"
	case EventOutput:
		return "output"
	case EventExited:
		return "exited"
	case EventReleased:
		return "released"
	}
	return "unknown"
}

// Event is one thing that happened to a terminal. A terminal's events
// arrive in order: Created, Output…, Exited, Released.
type Event struct {
	Kind       EventKind
	SessionID  acp.SessionID
	TerminalID acp.TerminalID
	// Info is set on EventCreated.
	Info *Info
	// Data is set on EventOutput. It belongs to the subscription and is
	// valid until the next call to Next: copy what must be kept longer.
	// Consecutive output of one terminal that queued up while the
	// subscriber was busy arrives as one event, so chunks have no meaning
	// beyond their order.
	Data []byte
	// Dropped counts the output bytes of this terminal that this
	// subscriber did not get just before this event, because it fell
	// behind (or, for the first event of a terminal subscription, because
	// they were written before it subscribed and are no longer retained).
	// Snapshot has the current tail when a UI needs to resynchronise.
	Dropped uint64
	// Status is set on EventExited and EventReleased.
	Status *ExitStatus
	// TimedOut, with Status, reports that Policy.Timeout expired and the
	// manager killed the command (see Output.TimedOut).
	TimedOut bool
	// Lost, set on EventExited and EventReleased by a host that lost touch
	// with where the command ran (the connection to an exec server ended
	// before its exit was heard), says so and what became of the command;
	// Status is then nil. A Manager never sets it.
	Lost string
}

// ErrSubscriptionClosed is returned by Subscription.Next once the
// subscription was closed (by Close, by the manager's Close, or after the
// Released event of a single-terminal subscription) and its queue is empty.
var ErrSubscriptionClosed = errors.New("terminal: subscription closed")

// ErrSubscriberOverflow is returned by Subscription.Next when the
// subscriber fell so far behind that even non-output events had to be
// dropped; the subscription is closed.
var ErrSubscriberOverflow = errors.New("terminal: subscriber fell too far behind")

// maxQueuedControl bounds the non-output events queued for one subscriber
// (three per terminal at most, so it takes thousands of unread terminals).
const maxQueuedControl = 1 << 16

// Subscription receives terminal events. Delivery never blocks the
// terminals: events queue per subscriber, output up to
// Options.SubscriberBuffer bytes, and output that does not fit is dropped
// and counted in the next event of the same terminal (Event.Dropped).
// A held subscription (SubscribeHeld, CreateHeld) is the exception: it
// drops nothing and holds the command back instead.
//
// Output is copied into buffers of the subscription's own, which it
// reuses once the subscriber is done with them (the next call to Next),
// and output that arrives while the last queued event is output of the
// same terminal is appended to that event. A subscriber that is slower
// than a command therefore gets fewer, larger events, and a fast one costs
// the command's reader a copy per chunk, not an allocation.
//
// A subscriber waiting in Next is woken for output within 2 ms, or at once when a quarter of its buffer is queued,
// rather than for every read of the pipe: waking a goroutine costs more
// than handling a chunk, and a command that writes as fast as it can
// would otherwise pay that cost thousands of times a second. Other events
// wake it at once.
//
// A terminal's output is complete, for a subscriber, once it has received
// that terminal's EventExited (or EventReleased): the manager publishes
// the exit only after it has read the pipe empty, so every Output event
// of the terminal comes before it, and bytes the subscriber missed are
// counted in the Dropped of the events that follow the gap, the exit
// included. See the package doc for a whole turn.
type Subscription struct {
	m          *Manager
	sessionID  acp.SessionID  // "" for all sessions
	terminalID acp.TerminalID // "" for all terminals of the session(s)
	t          *term          // the terminal, for a single-terminal subscription
	limit      int

	mu       sync.Mutex
	q        []Event
	head     int
	qBytes   int
	nControl int
	gaps     map[string]uint64 // terminal key -> output bytes dropped
	lent     []byte            // Data of the output event Next returned last
	spare    [][]byte          // output buffers to reuse, empty
	closed   bool
	err      error
	wake     chan struct{}
	waiting  bool          // Next waits for an event
	timer    *time.Timer   // wakes a waiting Next for output
	armed    bool          // timer runs or fired and was not received yet
	held     bool          // full, it holds the terminal's reader (hold.go)
	room     chan struct{} // wakes a reader held by this subscription
}

const (
	// minOutBuf is the smallest output buffer a subscription allocates.
	minOutBuf = 16 << 10
	// maxSpareBufs bounds the output buffers a subscription keeps for
	// reuse: one being filled while the subscriber reads another is the
	// steady state of one busy terminal.
	maxSpareBufs = 2
	// outputWakeDelay is how long output may wait for a subscriber that
	// waits in Next: too short to see, long enough to gather many reads
	// of a busy pipe into one event.
	outputWakeDelay = 2 * time.Millisecond
)

func newSubscription(m *Manager, sessionID acp.SessionID, terminalID acp.TerminalID) *Subscription {
	timer := time.NewTimer(outputWakeDelay)
	timer.Stop()
	return &Subscription{
		m:          m,
		sessionID:  sessionID,
		terminalID: terminalID,
		limit:      m.cfg.subBuffer,
		gaps:       map[string]uint64{},
		wake:       make(chan struct{}, 1),
		err:        ErrSubscriptionClosed,
		timer:      timer,
		room:       make(chan struct{}, 1),
	}
}

// deliver queues ev for the subscriber without ever blocking on it.
func (s *Subscription) deliver(ev Event, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if ev.Kind == EventOutput {
		if s.qBytes+len(ev.Data) > s.limit && !s.waitRoom(len(ev.Data)) {
			s.gaps[key] += uint64(len(ev.Data))
			return
		}
		if last := s.lastQueued(); last != nil && last.Kind == EventOutput &&
			last.TerminalID == ev.TerminalID && last.SessionID == ev.SessionID && s.gaps[key] == 0 {
			// The subscriber has not taken the previous chunk yet, and
			// nothing was dropped in between: one event carries both.
			last.Data = s.appendOutput(last.Data, ev.Data)
			s.qBytes += len(ev.Data)
			s.wakeForOutput()
			return
		}
		ev.Data = s.appendOutput(s.buffer(len(ev.Data)), ev.Data)
	} else if s.nControl >= maxQueuedControl {
		s.closed, s.err = true, ErrSubscriberOverflow
		s.q, s.head, s.qBytes, s.nControl = nil, 0, 0, 0
		s.lent, s.spare = nil, nil
		s.signal()
		return
	}
	if g := s.gaps[key]; g > 0 {
		ev.Dropped += g
		delete(s.gaps, key)
	}
	if ev.Kind == EventOutput {
		s.qBytes += len(ev.Data)
	} else {
		s.nControl++
	}
	if s.head > 0 && s.head >= len(s.q)/2 {
		// Reclaim the consumed front so that a reader that is always a
		// little behind does not make the queue grow.
		n := copy(s.q, s.q[s.head:])
		clear(s.q[n:])
		s.q, s.head = s.q[:n], 0
	}
	s.q = append(s.q, ev)
	if ev.Kind == EventReleased && s.t != nil {
		// A single-terminal subscription ends with its terminal.
		s.closed = true
	}
	if ev.Kind == EventOutput {
		s.wakeForOutput()
	} else {
		s.signal()
	}
}

// wakeForOutput wakes a waiting Next for the output just queued: at once
// when a quarter of the buffer is taken, else by the timer, which a
// first chunk starts and later ones leave running.
func (s *Subscription) wakeForOutput() {
	switch {
	case !s.waiting:
		// Next will find the output without being woken.
	case s.qBytes >= s.limit/4:
		s.signal()
	case !s.armed:
		s.armed = true
		s.timer.Reset(outputWakeDelay)
	}
}

// lastQueued is the newest event the subscriber has not taken, or nil.
func (s *Subscription) lastQueued() *Event {
	if s.head < len(s.q) {
		return &s.q[len(s.q)-1]
	}
	return nil
}

// buffer returns an empty output buffer for at least n bytes.
func (s *Subscription) buffer(n int) []byte {
	if k := len(s.spare); k > 0 {
		b := s.spare[k-1]
		s.spare[k-1] = nil
		s.spare = s.spare[:k-1]
		if cap(b) >= n {
			return b
		}
	}
	return make([]byte, 0, min(max(n, minOutBuf), max(s.limit, n)))
}

// appendOutput appends p to buf, growing it at most to the limit, which
// one event never exceeds, so that grown buffers stay reusable.
func (s *Subscription) appendOutput(buf, p []byte) []byte {
	if n := len(buf) + len(p); n > cap(buf) {
		nb := make([]byte, len(buf), min(max(2*cap(buf), n), max(s.limit, n)))
		copy(nb, buf)
		buf = nb
	}
	return append(buf, p...)
}

// reclaim takes back the buffer of the output event Next returned last.
func (s *Subscription) reclaim() {
	if s.lent == nil {
		return
	}
	if len(s.spare) < maxSpareBufs && cap(s.lent) <= max(s.limit, minOutBuf) {
		s.spare = append(s.spare, s.lent[:0])
	}
	s.lent = nil
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event, waiting for one until ctx is done. After
// the subscription is closed it returns the events still queued, then
// ErrSubscriptionClosed (or ErrSubscriberOverflow). Calling it again ends
// the previous output event's hold on its Data, which the subscription
// reuses; one goroutine at a time should call it.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	fired := false
	for {
		s.mu.Lock()
		s.waiting = false
		if fired {
			s.armed, fired = false, false
		}
		s.reclaim()
		if s.head < len(s.q) {
			ev := s.q[s.head]
			s.q[s.head] = Event{}
			s.head++
			if ev.Kind == EventOutput {
				s.qBytes -= len(ev.Data)
				s.lent = ev.Data
				if s.held {
					kick(s.room)
				}
			} else {
				s.nControl--
			}
			s.mu.Unlock()
			return ev, nil
		}
		if s.closed {
			err := s.err
			s.mu.Unlock()
			return Event{}, err
		}
		s.waiting = true
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.timer.C:
			fired = true
		case <-ctx.Done():
			s.mu.Lock()
			s.waiting = false
			s.mu.Unlock()
			return Event{}, ctx.Err()
		}
	}
}

// Close ends the subscription; queued events are discarded. Idempotent.
func (s *Subscription) Close() {
	s.m.unsubscribe(s)
	s.mu.Lock()
	s.closed = true
	s.q, s.head, s.qBytes, s.nControl = nil, 0, 0, 0
	s.lent, s.spare = nil, nil
	s.timer.Stop()
	s.mu.Unlock()
	s.signal()
	kick(s.room)
}

// end closes the subscription after its queued events (manager Close).
func (s *Subscription) end() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	kick(s.room)
}

// Subscribe returns a subscription to terminal events:
//   - Subscribe("", "") covers every terminal of every session;
//   - Subscribe(sid, "") covers the terminals of one session;
//   - Subscribe(sid, tid) covers one live terminal and starts with a replay
//     of what happened so far (Created, the retained output, Exited if it
//     has), so subscribing right after Create misses nothing; it ends after
//     the terminal's Released event.
//
// The first two see events from the moment they subscribe: subscribe
// before serving requests to see every terminal from its creation.
func (m *Manager) Subscribe(sessionID acp.SessionID, terminalID acp.TerminalID) (Events, error) {
	if terminalID == "" {
		s, err := m.subscribeWide(sessionID)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return nil, err
	}
	s, err := m.subscribeTo(t, false)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// subscribeTo subscribes to one terminal, with a replay of what happened
// so far; held makes it a held subscription.
func (m *Manager) subscribeTo(t *term, held bool) (*Subscription, error) {
	sessionID, terminalID := t.info.SessionID, t.info.TerminalID
	s := newSubscription(m, sessionID, terminalID)
	s.t, s.held = t, held
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		return nil, notFound(terminalID)
	}
	ci := t.info
	s.deliver(Event{Kind: EventCreated, SessionID: sessionID, TerminalID: terminalID, Info: &ci}, t.key)
	if n := t.out.Len(); n > 0 || t.out.Truncated() {
		data := t.out.Bytes()
		if len(data) > s.limit && !held { // a held one takes all there is
			data = data[len(data)-s.limit:]
		}
		s.deliver(Event{Kind: EventOutput, SessionID: sessionID, TerminalID: terminalID,
			Data: data, Dropped: t.out.Total() - uint64(len(data))}, t.key)
	}
	if t.isDone() {
		st := *t.status
		s.deliver(Event{Kind: EventExited, SessionID: sessionID, TerminalID: terminalID, Status: &st, TimedOut: t.timedOut}, t.key)
	}
	t.subs = append(t.subs, s)
	return s, nil
}

func (m *Manager) subscribeWide(sessionID acp.SessionID) (*Subscription, error) {
	s := newSubscription(m, sessionID, "")
	m.subMu.Lock()
	defer m.subMu.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errClosed()
	}
	old := m.wideSubs()
	subs := make([]*Subscription, 0, len(old)+1)
	subs = append(append(subs, old...), s)
	m.subs.Store(&subs)
	return s, nil
}

func (m *Manager) wideSubs() []*Subscription {
	if p := m.subs.Load(); p != nil {
		return *p
	}
	return nil
}

func (m *Manager) hasSubscribers(t *term) bool {
	if len(t.subs) > 0 {
		return true
	}
	for _, s := range m.wideSubs() {
		if s.sessionID == "" || s.sessionID == t.info.SessionID {
			return true
		}
	}
	return false
}

func (m *Manager) unsubscribe(s *Subscription) {
	if t := s.t; t != nil {
		t.mu.Lock()
		for i, x := range t.subs {
			if x == s {
				t.subs = append(t.subs[:i:i], t.subs[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
		return
	}
	m.subMu.Lock()
	defer m.subMu.Unlock()
	old := m.wideSubs()
	subs := make([]*Subscription, 0, len(old))
	for _, x := range old {
		if x != s {
			subs = append(subs, x)
		}
	}
	m.subs.Store(&subs)
}
