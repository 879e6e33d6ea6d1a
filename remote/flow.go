package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/terminal"
)

// handle receives the server's notifications, in order, and hands them
// to the subscriptions without ever blocking.
func (c *Client) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	c.seen()
	if req.IsCall() {
		// The one call a server makes, and only to a client that said in
		// its hello that it answers it.
		if req.Method == MethodAskHost && c.askHost != nil {
			var q AskHostRequest
			if err := json.Unmarshal(req.Params, &q); err != nil {
				return nil, fmt.Errorf("%w: %v", acp.ErrInvalidParams, err)
			}
			return c.answerAskHost(ctx, &q)
		}
		return nil, fmt.Errorf("%w: %s", acp.ErrMethodNotFound, req.Method)
	}
	if req.Method == NotifyNetworkDenied {
		c.takeDenial(req.Params)
		return nil, nil
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
	overflowed := c.deliverLocked(ev)
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

// deliverLocked hands an event to every subscription, and drops those
// that it ended (a subscription to one terminal, at its release). It
// reports whether one overflowed. c.mu is held.
func (c *Client) deliverLocked(ev wireEvent) (overflowed bool) {
	var finished []*Subscription
	for _, s := range c.subs {
		o, f := s.deliver(ev)
		overflowed = overflowed || o
		if f {
			finished = append(finished, s)
		}
	}
	if len(finished) > 0 {
		subs := make([]*Subscription, 0, len(c.subs))
		for _, s := range c.subs {
			if !slices.Contains(finished, s) {
				subs = append(subs, s)
			}
		}
		c.subs = subs
	}
	return overflowed
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

// holds reports whether a held subscription covers the session's new
// terminals.
func (c *Client) holds(sessionID acp.SessionID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if s.lossless && s.wide && s.covers(sessionID) {
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
