package remote

import (
	"context"
	"encoding/json"
	"github.com/acpterm/acpterm/acp"
	"sync"

	"github.com/acpterm/acpterm/terminal"
)

// wireEvent is a notification decoded: the event and, for output, the
// offset of its first byte (for an exit, the total).
type wireEvent struct {
	ev     terminal.Event
	offset uint64
}

// decodeEvent decodes one of the stream notifications; ok is false for
// anything else or anything malformed (ignored: the server is trusted to
// speak the protocol, not to be unable to hurt us).
func decodeEvent(method string, params json.RawMessage) (w wireEvent, ok bool) {
	switch method {
	case NotifyStarted:
		var n StartedNotification
		if json.Unmarshal(params, &n) != nil {
			return w, false
		}
		w.ev = terminal.Event{Kind: terminal.EventCreated, SessionID: n.SessionID, TerminalID: n.TerminalID,
			Info: &terminal.Info{SessionID: n.SessionID, TerminalID: n.TerminalID, Argv: n.Argv, Cwd: n.Cwd,
				PID: n.PID, OutputByteLimit: n.OutputByteLimit}}
	case NotifyOutput:
		var n OutputNotification
		if json.Unmarshal(params, &n) != nil {
			return w, false
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
	return w, true
}

// maxTracked bounds the terminals one subscription keeps a cursor for,
// and the non-output events it queues.
const maxTracked = 1 << 16

// Subscription receives the events of the target's terminals, as
// terminal.Subscription does locally: Created, Output…, Exited, Released
// per terminal. Delivery never blocks the connection: output beyond the
// buffer (ClientOptions.SubscriberBuffer) is dropped and counted in the
// Dropped of that terminal's next event, which also counts what the
// server's stream dropped. Event.Data stays valid (it is not reused).
type Subscription struct {
	c         *Client
	sessionID acp.SessionID
	limit     int

	mu       sync.Mutex
	q        []terminal.Event
	qBytes   int
	nControl int
	next     map[string]uint64 // terminal key -> offset of the next byte not yet queued
	closed   bool
	err      error
	wake     chan struct{}
}

// Subscribe returns a subscription to the events of one session's
// terminals, or of all ("" ). It sees events from the moment it
// subscribes: subscribe before creating terminals to see them from their
// start (or Resume a terminal to have its retained output again).
func (c *Client) Subscribe(sessionID acp.SessionID) (*Subscription, error) {
	s := &Subscription{c: c, sessionID: sessionID, limit: c.limit, next: map[string]uint64{},
		wake: make(chan struct{}, 1), err: terminal.ErrSubscriptionClosed}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return nil, c.endErrLocked()
	default:
	}
	subs := make([]*Subscription, 0, len(c.subs)+1)
	c.subs = append(append(subs, c.subs...), s)
	return s, nil
}

// endErrLocked is endErr for a caller holding c.mu.
func (c *Client) endErrLocked() error {
	c.mu.Unlock()
	defer c.mu.Lock()
	return c.endErr()
}

// endSubscriptions ends every subscription after its queued events, with
// the connection's end as their error.
func (c *Client) endSubscriptions() {
	err := c.endErr()
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for _, s := range subs {
		s.end(err)
	}
}

func (s *Subscription) deliver(w wireEvent) {
	ev := w.ev
	if s.sessionID != "" && ev.SessionID != s.sessionID {
		return
	}
	key := string(ev.SessionID) + "\x00" + string(ev.TerminalID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	next, known := s.next[key]
	if !known && len(s.next) >= maxTracked {
		s.overflow()
		return
	}
	switch ev.Kind {
	case terminal.EventOutput:
		end := w.offset + uint64(len(ev.Data))
		if end <= next {
			return // replayed bytes this subscription already has
		}
		if w.offset < next {
			ev.Data = ev.Data[next-w.offset:]
		} else {
			ev.Dropped = w.offset - next
		}
		if s.qBytes+len(ev.Data) > s.limit {
			// Not queued: the cursor stays, and the gap is counted in
			// the next event that is.
			s.next[key] = next
			s.wakeUp()
			return
		}
		s.next[key] = end
		s.qBytes += len(ev.Data)
	case terminal.EventExited:
		if w.offset > next {
			ev.Dropped = w.offset - next
			next = w.offset
		}
		s.next[key] = next
		s.nControl++
	case terminal.EventReleased:
		delete(s.next, key)
		s.nControl++
	default:
		s.next[key] = next
		s.nControl++
	}
	if s.nControl > maxTracked {
		s.overflow()
		return
	}
	s.q = append(s.q, ev)
	s.wakeUp()
}

// overflow closes a subscription that fell so far behind that even
// non-output events could not be kept.
func (s *Subscription) overflow() {
	s.closed, s.err = true, terminal.ErrSubscriberOverflow
	s.q, s.qBytes, s.nControl, s.next = nil, 0, 0, nil
	s.wakeUp()
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
		if len(s.q) > 0 {
			ev := s.q[0]
			s.q[0] = terminal.Event{}
			s.q = s.q[1:]
			if ev.Kind == terminal.EventOutput {
				s.qBytes -= len(ev.Data)
			} else {
				s.nControl--
			}
			s.mu.Unlock()
			return ev, nil
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

// Close ends the subscription; queued events are discarded. Idempotent.
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
	s.q, s.qBytes, s.nControl = nil, 0, 0
	s.mu.Unlock()
	s.wakeUp()
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
