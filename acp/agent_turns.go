package acp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// ErrTurnCancelled is the cause (context.Cause) of a Prompt's ctx that
// AgentConn cancelled because the client sent session/cancel for the
// session, or session/close (the cause then wraps it and says so).
var ErrTurnCancelled = errors.New("acp: the client cancelled the turn")

// ErrTurnSuperseded is the cause (context.Cause) of a Prompt's ctx that
// AgentConn cancelled because the client sent a newer session/prompt for
// the same session.
var ErrTurnSuperseded = errors.New("acp: a newer session/prompt for the session superseded the turn")

// errSessionClosed is the cause for a turn ended by session/close, which
// the protocol asks to treat as a session/cancel.
var errSessionClosed = fmt.Errorf("%w (session/close)", ErrTurnCancelled)

// maxCancelMarks bounds the session/cancel marks turns keeps (see
// turns.marks): one per session, so a client sending cancels for endless
// made-up sessions cannot grow the map.
const maxCancelMarks = 256

// turns is what AgentConn knows of the running prompt turns of its
// sessions, so that it can cancel them itself: the Agent then needs no
// map of cancel funcs, and no Cancel at all.
type turns struct {
	mu       sync.Mutex
	sessions map[SessionID]*sessionTurns
	// marks holds, per session, the Seq of the last session/cancel. Prompt
	// handlers run in goroutines of their own, so a session/cancel sent
	// right after a session/prompt may be handled before that prompt's
	// handler has registered its turn: a turn registering with a smaller
	// Seq than the mark is born cancelled. Later prompts (a larger Seq)
	// are not affected, so a stale mark does no harm.
	marks map[SessionID]uint64
}

// sessionTurns are the turns of one session: those running Prompt and,
// with SupersedePrompts, any waiting for the running one to return. Entries exist only while a turn does.
type sessionTurns struct {
	turns []*turn
	token chan struct{} // capacity 1: held while the session's Prompt runs (SupersedePrompts)
}

type turn struct {
	seq    uint64
	cancel context.CancelCauseFunc
}

// begin registers a prompt turn with Seq seq for session sid and returns
// its ctx, born cancelled if a later session/cancel was already handled.
// With supersede, a turn with a smaller Seq in the same session is
// superseded, and so is this one if the session has one with a larger Seq
// (two prompts racing to register).
func (ts *turns) begin(ctx context.Context, seq uint64, sid SessionID, supersede bool) (context.Context, *turn, *sessionTurns) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := &turn{seq: seq, cancel: cancel}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.sessions == nil {
		ts.sessions = map[SessionID]*sessionTurns{}
	}
	s := ts.sessions[sid]
	if s == nil {
		s = &sessionTurns{token: make(chan struct{}, 1)}
		ts.sessions[sid] = s
	}
	if ts.marks[sid] > seq {
		cancel(ErrTurnCancelled)
	}
	for _, u := range s.turns {
		if !supersede {
			break
		}
		if u.seq < seq {
			u.cancel(ErrTurnSuperseded)
		} else {
			cancel(ErrTurnSuperseded)
		}
	}
	s.turns = append(s.turns, t)
	return ctx, t, s
}

// end forgets a turn whose handler has returned.
func (ts *turns) end(sid SessionID, t *turn, s *sessionTurns) {
	t.cancel(context.Canceled)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for i, u := range s.turns {
		if u == t {
			s.turns = append(s.turns[:i], s.turns[i+1:]...)
			break
		}
	}
	if len(s.turns) == 0 {
		delete(ts.sessions, sid)
	}
}

// cancelSession cancels every turn of session sid, those already
// registered and, through the mark, those read before seq whose handlers
// have not registered yet.
func (ts *turns) cancelSession(sid SessionID, seq uint64, cause error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.marks == nil {
		ts.marks = map[SessionID]uint64{}
	}
	if _, ok := ts.marks[sid]; !ok && len(ts.marks) >= maxCancelMarks {
		ts.forgetOldestMarkLocked()
	}
	ts.marks[sid] = max(ts.marks[sid], seq)
	if s := ts.sessions[sid]; s != nil {
		for _, u := range s.turns {
			u.cancel(cause)
		}
	}
}

// forgetOldestMarkLocked drops the mark with the smallest Seq: the one
// least likely to still have a prompt in flight before it.
func (ts *turns) forgetOldestMarkLocked() {
	var oldest SessionID
	first := true
	for sid, seq := range ts.marks {
		if first || seq < ts.marks[oldest] {
			oldest, first = sid, false
		}
	}
	delete(ts.marks, oldest)
}

// endedByClient reports whether ctx is a turn's that the client ended:
// session/cancel, session/close or a newer prompt.
func endedByClient(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, ErrTurnCancelled) || errors.Is(cause, ErrTurnSuperseded)
}

// prompt serves session/prompt: its ctx is cancelled by session/cancel,
// session/close or (ConnOptions.SupersedePrompts) a newer prompt for the
// session, which also makes one Agent.Prompt run per session at a time;
// and a turn the client ended is answered with StopReasonCancelled, as the
// protocol requires, even when Prompt returns an error because of the
// cancel.
func (a *AgentConn) prompt(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	p := new(PromptRequest)
	if err := decodeParams(req.Params, p); err != nil {
		return nil, err
	}
	return a.runTurn(ctx, req.Seq, p)
}

// runTurn runs the Agent's Prompt for the session/prompt read as the
// seq'th message, with the protocol's cancellation rules (see prompt).
func (a *AgentConn) runTurn(ctx context.Context, seq uint64, p *PromptRequest) (*PromptResponse, error) {
	supersede := a.opts != nil && a.opts.SupersedePrompts
	ctx, t, s := a.turns.begin(ctx, seq, p.SessionID, supersede)
	defer a.turns.end(p.SessionID, t, s)
	cancelled := &PromptResponse{StopReason: StopReasonCancelled}
	if supersede {
		select {
		case s.token <- struct{}{}:
		case <-ctx.Done():
			if endedByClient(ctx) {
				return cancelled, nil // superseded or cancelled while it waited
			}
			return nil, ctx.Err()
		}
		defer func() { <-s.token }()
	}
	if endedByClient(ctx) {
		return cancelled, nil // cancelled before it could start
	}
	resp, err := a.agent.Prompt(ctx, p)
	if err != nil && endedByClient(ctx) {
		a.opts.logf("acp: session/prompt for session %q failed after the client ended the turn; answered %q: %v", p.SessionID, StopReasonCancelled, err)
		return cancelled, nil
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = new(PromptResponse)
	}
	return resp, nil
}

// cancel serves session/cancel: the session's turns are cancelled first,
// then the Agent's own Cancel, if it has one, is called.
func (a *AgentConn) cancel(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	return notify(ctx, req, func(ctx context.Context, n *CancelNotification) error {
		a.turns.cancelSession(n.SessionID, req.Seq, ErrTurnCancelled)
		if c, ok := a.agent.(SessionCanceller); ok {
			return c.Cancel(ctx, n)
		}
		return nil
	})
}

// closeSession serves session/close, which the protocol asks to cancel the
// session's work as session/cancel does before the session is freed.
func (a *AgentConn) closeSession(h SessionCloser, seq uint64) func(context.Context, *CloseSessionRequest) (*CloseSessionResponse, error) {
	return func(ctx context.Context, req *CloseSessionRequest) (*CloseSessionResponse, error) {
		a.turns.cancelSession(req.SessionID, seq, errSessionClosed)
		return h.CloseSession(ctx, req)
	}
}
