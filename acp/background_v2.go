package acp

import (
	"context"
	"encoding/json"
	"fmt"
)

// Background work on the agent's side of a v2 connection: what AgentConn
// tracks of the terminals and tool calls its Agent shows, so that every
// state update can list what still runs, and how registered items are
// cancelled.

// findItem returns the item with the id and its place, or -1 and nil.
func findItem(items []*agentItem, id string) (int, *agentItem) {
	for i, it := range items {
		if it.id == id {
			return i, it
		}
	}
	return -1, nil
}

// background is the session's background list; never nil, since an
// agent that reports background work must report it on every state update.
func (v *agentV2) background(sid SessionID) []V2BackgroundWork {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.session(sid)
	out := []V2BackgroundWork{}
	for _, t := range s.terminals {
		out = append(out, &V2BackgroundTerminal{TerminalID: TerminalID(t.id)})
	}
	for _, t := range s.toolCalls {
		out = append(out, &V2BackgroundToolCall{ToolCallID: ToolCallID(t.id)})
	}
	return out
}

// sendUpdateV2 checks a v2 update, tracks its terminals and tool calls,
// advertises cancel where registered, and sends it.
func (a *AgentConn) sendUpdateV2(ctx context.Context, raw json.RawMessage) error {
	n := new(V2UpdateSessionNotification)
	if err := json.Unmarshal(raw, n); err != nil {
		return fmt.Errorf("acp: a session update v2 cannot read: %w", err)
	}
	if !a.track(n) {
		return a.rpc.Notify(ctx, MethodSessionUpdate, n)
	}
	if err := a.rpc.Notify(ctx, MethodSessionUpdate, n); err != nil {
		return err
	}
	// Background work ended: outside a turn, a state update says so at
	// once (inside one, the turn's next state update will).
	a.v2.mu.Lock()
	idle := a.v2.session(n.SessionID).inTurn == 0
	a.v2.mu.Unlock()
	if idle {
		return a.sendState(ctx, n.SessionID, &V2IdleStateUpdate{})
	}
	return nil
}

// track notes announced terminals, exits and final tool call statuses,
// and puts capabilities.cancel on (or off) the updates of registered items.
// It reports whether the update ends a piece of background work.
func (a *AgentConn) track(n *V2UpdateSessionNotification) (ended bool) {
	a.v2.mu.Lock()
	defer a.v2.mu.Unlock()
	s := a.v2.session(n.SessionID)
	switch u := n.Update.(type) {
	case *V2TerminalUpdate:
		i, it := findItem(s.terminals, string(u.TerminalID))
		if u.ExitStatus != nil {
			if it != nil {
				s.terminals = append(s.terminals[:i], s.terminals[i+1:]...)
				if it.advertised && u.Capabilities == nil {
					u.Capabilities = &V2TerminalCapabilities{} // stop advertising cancel
				}
			}
			return it != nil
		}
		if it == nil {
			it = &agentItem{id: string(u.TerminalID)}
			s.terminals = append(s.terminals, it)
		}
		if it.stop != nil && !it.advertised && u.Capabilities == nil {
			u.Capabilities = &V2TerminalCapabilities{Cancel: &V2TerminalCancelCapabilities{}}
			it.advertised = true
		}
	case *V2ToolCallUpdate:
		i, it := findItem(s.toolCalls, string(u.ToolCallID))
		if it == nil {
			return false
		}
		if u.Status != nil && isFinal(*u.Status) {
			s.toolCalls = append(s.toolCalls[:i], s.toolCalls[i+1:]...)
			if it.advertised && u.Capabilities == nil {
				u.Capabilities = &V2ToolCallCapabilities{}
			}
			return true
		}
		if !it.advertised && u.Capabilities == nil {
			u.Capabilities = &V2ToolCallCapabilities{Cancel: &V2ToolCallCancelCapabilities{}}
			it.advertised = true
		}
	}
	return false
}

func isFinal(st V2ToolCallStatus) bool {
	return st == V2ToolCallStatusCompleted || st == V2ToolCallStatusFailed || st == V2ToolCallStatusCancelled
}

// CancellableTerminal registers how to stop a terminal the agent runs in
// session sid and shows with terminal_update updates. On a v2 connection
// its updates then advertise capabilities.cancel until the one with its
// exit status, and the client's terminal/cancel calls stop, on a
// goroutine of the connection's that Close and Wait join; stop may be
// called more than once. The agent then reports the exit status as usual.
// Registered after the terminal's first update, the
// advertisement goes out at once (with ctx). On a v1 connection it does
// nothing: v1 has no terminal/cancel.
func (a *AgentConn) CancellableTerminal(ctx context.Context, sid SessionID, id TerminalID, stop func()) error {
	if !a.isV2() {
		return nil
	}
	a.v2.mu.Lock()
	s := a.v2.session(sid)
	_, it := findItem(s.terminals, string(id))
	announced := it != nil
	if it == nil {
		it = &agentItem{id: string(id)}
		s.terminals = append(s.terminals, it)
	}
	it.stop = stop
	a.v2.mu.Unlock()
	if !announced {
		return nil
	}
	return a.SessionUpdateV2(ctx, &V2UpdateSessionNotification{SessionID: sid, Update: &V2TerminalUpdate{TerminalID: id}})
}

// CancellableToolCall registers a tool call whose work goes on in the
// background and how to stop it, as CancellableTerminal does for a
// terminal: it is listed in the session's background work until a
// tool_call_update gives it a final status, its updates advertise
// capabilities.cancel, and tool_call/cancel calls stop. Work that runs a
// terminal is listed as its terminal, not as its tool call.
func (a *AgentConn) CancellableToolCall(ctx context.Context, sid SessionID, id ToolCallID, stop func()) error {
	if !a.isV2() {
		return nil
	}
	a.v2.mu.Lock()
	s := a.v2.session(sid)
	if _, it := findItem(s.toolCalls, string(id)); it == nil {
		s.toolCalls = append(s.toolCalls, &agentItem{id: string(id), stop: stop})
	}
	a.v2.mu.Unlock()
	return a.SessionUpdateV2(ctx, &V2UpdateSessionNotification{SessionID: sid, Update: &V2ToolCallUpdate{ToolCallID: id}})
}

func (a *AgentConn) cancelTerminalV2(ctx context.Context, r *V2CancelTerminalRequest) (*V2CancelTerminalResponse, error) {
	a.v2.mu.Lock()
	_, it := findItem(a.v2.session(r.SessionID).terminals, string(r.TerminalID))
	a.v2.mu.Unlock()
	if it == nil || it.stop == nil {
		return nil, fmt.Errorf("%w: terminal %q of session %q is unknown, has exited or cannot be cancelled", ErrInvalidParams, r.TerminalID, r.SessionID)
	}
	a.stopItem(it.stop)
	return &V2CancelTerminalResponse{}, nil
}

func (a *AgentConn) cancelToolCallV2(ctx context.Context, r *V2CancelToolCallRequest) (*V2CancelToolCallResponse, error) {
	a.v2.mu.Lock()
	_, it := findItem(a.v2.session(r.SessionID).toolCalls, string(r.ToolCallID))
	a.v2.mu.Unlock()
	if it == nil || it.stop == nil {
		return nil, fmt.Errorf("%w: tool call %q of session %q is unknown, final or cannot be cancelled", ErrInvalidParams, r.ToolCallID, r.SessionID)
	}
	a.stopItem(it.stop)
	return &V2CancelToolCallResponse{}, nil
}

// stopItem calls a registered stop function on a goroutine of the
// connection's (Close and Wait join it): the answer means accepted, not
// stopped, so it need not wait, and stop may take its time.
func (a *AgentConn) stopItem(stop func()) {
	a.v2.wg.Add(1)
	go func() {
		defer a.v2.wg.Done()
		stop()
	}()
}
