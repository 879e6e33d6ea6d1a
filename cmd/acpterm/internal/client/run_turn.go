package client

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/acpterm/acpterm/acp"
)

// turn sends one prompt in the open session and waits for the turn to
// end; the driver is then in phase after (phaseDone for a single turn,
// phaseIdle between the turns of an interactive session). It returns the
// stop reason ("" when the turn did not end normally), the exit status,
// and the error message for a failure.
func (d *driver) turn(ctx context.Context, text string, after phase) (acp.StopReason, int, string) {
	c := &d.cfg
	d.mu.Lock()
	sid := d.sid
	d.phase = phaseTurn
	interrupted := d.interrupts > 0
	d.mu.Unlock()
	if interrupted {
		return "", ExitCancelled, "interrupted before the turn started"
	}
	d.remember(text)
	if c.Interactive {
		// What the agent wrote on stderr since the last turn (its
		// start-up, the turn before, the time in between), before this
		// turn's output; the session went on, so nothing failed. A
		// single turn keeps it all for the end of the run.
		d.flushStderr(false)
	}
	d.sw.fresh()
	d.watch.Reset()
	d.view.start(filepath.Base(c.Agent[0]))
	turnDone := make(chan struct{})
	defer close(turnDone)
	if c.TurnTimeout > 0 {
		d.wg.Add(1)
		go d.watchTurn(sid, turnDone)
	}
	callCtx, done := d.callCtx(ctx, 0)
	resp, err := d.conn.Prompt(callCtx, &acp.PromptRequest{
		SessionID: sid,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: text}},
	})
	d.mu.Lock()
	d.phase = after
	d.mu.Unlock()
	if d.turnTimedOut() && !d.cancelledByUser() {
		// Whether the agent ended the cancelled turn or was killed, the
		// turn is reported as cancelled by the timeout.
		done()
		how := "cancelled"
		if d.wasKilled() {
			how = "cancelled; the agent did not stop and was killed"
		}
		return acp.StopReasonCancelled, ExitTimeout, fmt.Sprintf("the turn ran longer than --turn-timeout %s (%s)", c.TurnTimeout, how)
	}
	var pe *protocolError
	if err == nil && callCtx.Err() != nil && errors.As(context.Cause(callCtx), &pe) {
		// A protocol error ended the call: Prompt sent session/cancel, and
		// an agent may well answer that in time. The turn failed all the
		// same.
		err = callCtx.Err()
	}
	if err != nil {
		code, msg := d.callFailed(callCtx, "session/prompt", err)
		done()
		if code == ExitCancelled {
			return acp.StopReasonCancelled, code, msg
		}
		return "", code, msg
	}
	done()
	if d.cancelledByUser() && resp.StopReason != acp.StopReasonCancelled {
		// The spec asks an agent to answer a cancelled turn with
		// "cancelled", but some answer "end_turn" (or anything else). The
		// user pressed Ctrl-C: the turn is shown and reported as cancelled
		// whatever the agent says, so a script never takes it for success.
		d.warn(fmt.Sprintf("acpterm: the agent ended the cancelled turn with stop reason %q", shortStopReason(resp.StopReason)))
		return acp.StopReasonCancelled, ExitCancelled, ""
	}
	code := ExitCodeFor(resp.StopReason)
	if code == ExitAgent {
		return "", code, fmt.Sprintf("the agent ended the turn with an unknown stop reason %q", resp.StopReason)
	}
	return resp.StopReason, code, ""
}

// shortStopReason cuts an agent's stop reason for a diagnostic: it is
// agent text, so at most a short prefix of it is shown, and %q escapes the
// rest.
func shortStopReason(r acp.StopReason) string {
	s := string(r)
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}
