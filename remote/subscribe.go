package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// Subscribe returns a subscription to the events of the target's
// terminals, as terminal.Manager.Subscribe does locally:
//   - Subscribe("", "") covers every terminal of this client;
//   - Subscribe(sid, "") the terminals of one session;
//   - Subscribe(sid, tid) one live terminal, starting with a replay of
//     what the target retains of it (its start, its tail, its exit if it
//     has exited), asked for in the background (remote/subscribe); it
//     ends after the terminal's EventReleased.
//
// The first two see events from the moment they subscribe: subscribe
// before creating terminals to see them from their start.
func (c *Client) Subscribe(sessionID acp.SessionID, terminalID acp.TerminalID) (terminal.Events, error) {
	return c.subscribeTo(sessionID, terminalID, false)
}

// SubscribeHeld is Subscribe for a subscriber that must see every byte,
// as terminal.Manager.SubscribeHeld: the terminals it covers stream
// losslessly (for a session, those created while it is open; for one
// terminal, from its replay on). Their commands then wait for the
// slowest held subscriber (as for a pipe to a slow reader: each holds at
// most ClientOptions.Window bytes of a terminal), so a subscriber that
// stops calling Next stops them; Close it to let them run on. Other
// terminals, the connection and every call go on meanwhile.
func (c *Client) SubscribeHeld(sessionID acp.SessionID, terminalID acp.TerminalID) (terminal.Events, error) {
	return c.subscribeTo(sessionID, terminalID, true)
}

func (c *Client) subscribeTo(sessionID acp.SessionID, terminalID acp.TerminalID, held bool) (terminal.Events, error) {
	if terminalID == "" {
		s, err := c.subscribe(sessionID, "", held, "")
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	c.mu.Lock()
	t := c.terms[termKey(sessionID, terminalID)]
	c.mu.Unlock()
	if t == nil {
		return nil, &terminal.Error{Kind: terminal.ErrNotFound, Message: fmt.Sprintf("terminal %q not found", terminalID)}
	}
	s, err := c.subscribe(sessionID, terminalID, held, "")
	if err != nil {
		return nil, err
	}
	var window uint64
	if held {
		window = c.window
	}
	// The replay comes as a restarted stream: the subscription takes its
	// start and the bytes it has not had (by offset), the others only
	// the bytes they missed.
	c.wg.Go(func() {
		ctx, cancel := context.WithTimeout(c.grantCtx, releaseBound)
		defer cancel()
		if err := c.resume(ctx, sessionID, terminalID, 0, window); err != nil && !errors.Is(err, ErrDisconnected) && ctx.Err() == nil {
			c.logf("replaying terminal %q for a new subscription: %v", clip(string(terminalID), 64), err)
		}
	})
	return s, nil
}

func (c *Client) subscribe(sessionID acp.SessionID, terminalID acp.TerminalID, lossless bool, tag string) (*Subscription, error) {
	s := &Subscription{c: c, sessionID: sessionID, terminalID: terminalID, limit: c.limit, lossless: lossless,
		tag: tag, wide: terminalID == "" && tag == "", replay: terminalID != "", next: map[string]uint64{}, exits: map[string]bool{},
		pend: map[string]int{}, wake: make(chan struct{}, 1), err: terminal.ErrSubscriptionClosed}
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

// bind makes a create's held subscription cover the terminal the
// create's answer names. The answer is what counts: when a start with
// the create's tag bound it to another terminal (a target inventing
// one), what it queued of that one is dropped, and it starts over on
// the answer's with a replay (rebound). It reports whether it rebound.
func (s *Subscription) bind(terminalID acp.TerminalID) (rebound bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminalID == terminalID {
		return false
	}
	rebound = s.terminalID != ""
	if rebound {
		s.dropQueueLocked()
		clear(s.next)
		clear(s.pend)
		clear(s.exits)
		s.replay = true
	}
	s.terminalID = terminalID
	return rebound
}

// admits reports whether the subscription covers the event's terminal,
// binding a create's subscription to its terminal at its start. s.mu is
// held.
func (s *Subscription) admits(w *wireEvent) bool {
	if !s.covers(w.ev.SessionID) {
		return false
	}
	if s.tag != "" && s.terminalID == "" {
		if w.ev.Kind != terminal.EventCreated || w.tag != s.tag {
			return false
		}
		s.terminalID = w.ev.TerminalID
	}
	return s.terminalID == "" || s.terminalID == w.ev.TerminalID
}
