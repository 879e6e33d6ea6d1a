package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// A v2 turn on the client's side: session/prompt is acknowledged, and the
// turn ends with an idle state update, which Prompt waits for.

// clientTurn is a Prompt waiting for its turn to end.
type clientTurn struct {
	started bool // a running or requires_action state since the prompt was sent, or its acknowledgement
	done    chan struct{}
	idle    *V2IdleStateUpdate
}

// promptV2 sends a v2 session/prompt and waits for the idle state update
// that ends the turn: the first after the agent reported the turn running
// (or waiting for the user), or after it acknowledged the prompt. A ctx
// that ends sends session/cancel (after the prompt) and waits, within
// PromptCancelWait, for the agent to end the turn, as Prompt does in v1;
// past the wait a prompt still unacknowledged is withdrawn with
// $/cancel_request.
func (c *ClientConn) promptV2(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	p := new(V2PromptRequest)
	if err := convert(p, req); err != nil {
		return nil, fmt.Errorf("acp: the prompt in v2's words: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := c.beginTurn(req.SessionID)
	defer c.endTurn(req.SessionID, t)
	wait := c.opts.promptCancelWait()
	if wait < 0 {
		if err := c.rpc.CallOrdered(ctx, MethodSessionPrompt, p, new(V2PromptResponse), nil, func(json.RawMessage) { c.turnAcknowledged(t) }); err != nil {
			return nil, peerCallError(MethodSessionPrompt, err)
		}
		select {
		case <-t.done:
			return turnResult(t.idle)
		case <-c.Done():
			return nil, fmt.Errorf("%w: before the turn of session %q ended", ErrConnClosed, req.SessionID)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	callCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	var w cancelWatch
	queued := func() { w.start(ctx, callCtx, abandon, wait, c, req.SessionID) }
	defer w.fired()
	// The acknowledgement counts where it falls among the updates: an
	// idle one handled after it ends this turn, not one handled before.
	err := c.rpc.CallOrdered(callCtx, MethodSessionPrompt, p, new(V2PromptResponse), queued, func(json.RawMessage) { c.turnAcknowledged(t) })
	if err != nil {
		var re *jsonrpc2.Error
		if ctx.Err() == nil || errors.As(err, &re) {
			return nil, peerCallError(MethodSessionPrompt, err) // the agent's own answer
		}
		return nil, ctx.Err()
	}
	select {
	case <-t.done:
		return turnResult(t.idle)
	case <-c.Done():
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: before the turn of session %q ended", ErrConnClosed, req.SessionID)
	case <-callCtx.Done(): // ctx ended and the wait passed
		return nil, ctx.Err()
	}
}

func (c *ClientConn) turnAcknowledged(t *clientTurn) {
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	t.started = true
}

// turnResult is an idle state update in v1's words: its stop reason, or
// the failure an "error" stop reason reports, as the error a v1 agent
// would have answered session/prompt with.
func turnResult(idle *V2IdleStateUpdate) (*PromptResponse, error) {
	resp := &PromptResponse{Meta: idle.Meta}
	if idle.StopReason != nil {
		resp.StopReason = *idle.StopReason
	}
	if resp.StopReason == StopReasonError {
		e := idle.StopError()
		if e == nil {
			e = &Error{Code: CodeInternalError, Message: "the agent ended the turn with an error and no details"}
		}
		return nil, &PeerError{Method: MethodSessionPrompt, Err: e}
	}
	return resp, nil
}

func (c *ClientConn) beginTurn(sid SessionID) *clientTurn {
	t := &clientTurn{done: make(chan struct{})}
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	if c.v2.turns == nil {
		c.v2.turns = map[SessionID][]*clientTurn{}
	}
	c.v2.turns[sid] = append(c.v2.turns[sid], t)
	return t
}

func (c *ClientConn) endTurn(sid SessionID, t *clientTurn) {
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	ts := c.v2.turns[sid]
	for i, u := range ts {
		if u == t {
			ts = append(ts[:i], ts[i+1:]...)
			break
		}
	}
	if len(ts) == 0 {
		delete(c.v2.turns, sid)
	} else {
		c.v2.turns[sid] = ts
	}
}

// turnState moves the session's waiting Prompts along.
func (c *ClientConn) turnState(sid SessionID, st V2State) {
	c.v2.mu.Lock()
	defer c.v2.mu.Unlock()
	for _, t := range c.v2.turns[sid] {
		switch s := st.(type) {
		case *V2RunningStateUpdate, *V2RequiresActionStateUpdate:
			t.started = true
		case *V2IdleStateUpdate:
			if t.started && t.idle == nil {
				t.idle = s
				close(t.done)
			}
		}
	}
}
