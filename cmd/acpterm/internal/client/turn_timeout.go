package client

import (
	"context"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// watchTurn ends a turn that runs longer than Config.TurnTimeout the way
// a Ctrl-C would: session/cancel at once, then, if the agent has not ended
// the turn CancelGrace later, a kill of the agent and its terminals. It
// returns when the turn ends (turnDone) or the run stops (d.stop), so
// shutdown joins it.
func (d *driver) watchTurn(sid acp.SessionID, turnDone <-chan struct{}) {
	defer d.wg.Done()
	t := time.NewTimer(d.cfg.TurnTimeout)
	defer t.Stop()
	// expired waits for t, and reports false if the turn or the run ended
	// first.
	expired := func() bool {
		select {
		case <-d.stop:
			return false
		case <-turnDone:
			return false
		case <-t.C:
			return true
		}
	}
	if !expired() {
		return
	}
	d.mu.Lock()
	if d.phase != phaseTurn {
		d.mu.Unlock()
		return
	}
	d.timedOut = true
	d.mu.Unlock()
	d.warn(fmt.Sprintf("acpterm: the turn ran longer than --turn-timeout %s; cancelling it", d.cfg.TurnTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	// session/cancel first: the agent handles it before it sees the
	// "cancelled" answers to its pending permission requests.
	_ = d.conn.Cancel(ctx, &acp.CancelNotification{SessionID: sid})
	cancel()
	d.perm.CancelAll()
	t.Reset(d.cfg.CancelGrace)
	if !expired() {
		return
	}
	d.mu.Lock()
	turn := d.phase == phaseTurn
	d.mu.Unlock()
	if turn {
		d.kill()
		d.warn(fmt.Sprintf("acpterm: the agent did not end the cancelled turn within %s; killed it", d.cfg.CancelGrace))
	}
}

// turnTimedOut reports whether --turn-timeout ended the turn.
func (d *driver) turnTimedOut() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.timedOut
}
