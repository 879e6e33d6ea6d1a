package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// This file turns interrupts (Ctrl-C, SIGTERM, Ctrl-C typed at a
// question) into a cancel, then a kill, and shuts the run down.

// watchSignals turns interrupts into a cancel, then a kill. The grace
// period of a cancel ends with the interactive turn it cancelled
// (turnOver).
func (d *driver) watchSignals() {
	defer d.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var grace <-chan time.Time
	startGrace := func() {
		if grace == nil {
			t.Reset(d.cfg.CancelGrace)
			grace = t.C
		}
	}
	for {
		select {
		case <-d.stop:
			return
		case <-d.cfg.Interrupts:
			if d.interrupt() {
				startGrace()
			}
		case <-d.cancelSent:
			startGrace()
		case <-d.turnOver:
			t.Stop()
			grace = nil
		case <-grace:
			grace = nil
			d.kill()
			d.warn(fmt.Sprintf("acpterm: the agent did not end the cancelled turn within %s; killed it", d.cfg.CancelGrace))
		}
	}
}

// promptInterrupt is Ctrl-C typed at a permission question, where raw
// mode makes it a byte instead of SIGINT. It is handled as that signal
// would be, but before the question is answered: sent to ourselves as a
// signal, it could arrive after the agent, told "no", had already ended
// the turn, which would then not count as cancelled.
func (d *driver) promptInterrupt() {
	if d.interrupt() {
		select {
		case d.cancelSent <- struct{}{}: // watchSignals starts the grace period
		default:
		}
	}
}

// interrupt handles one SIGINT/SIGTERM. It reports whether a cancel was
// sent, which starts the grace period. Within a turn the first one cancels
// it and the second kills the agent; during setup it ends the run; between
// the turns of an interactive session it ends the session.
func (d *driver) interrupt() bool {
	d.mu.Lock()
	d.interrupts++
	n, ph, sid := d.interrupts, d.phase, d.sid
	if (ph == phaseSetup || ph == phaseIdle) && d.cancelCall != nil {
		d.cancelCall(errInterrupted)
	}
	d.mu.Unlock()
	switch {
	case ph == phaseIdle:
		// Between the turns of an interactive session (the prompt line
		// takes Ctrl-C as a key, so this is a signal from elsewhere, or
		// Ctrl-C during an in-session command): the session ends.
		d.requestQuit()
		return false
	case n > 1 || ph == phaseDone:
		// Kill first: the warning goes to stderr, which a stalled reader
		// could block.
		d.kill()
		d.warn("acpterm: killing the agent and its terminals")
		return false
	case ph == phaseSetup:
		return false
	}
	// The cancel goes first, as the kill above: the warning goes to
	// stderr, which a stalled reader could block.
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// session/cancel first: the agent handles it before it sees the
		// "cancelled" answers to its pending permission requests.
		_ = d.conn.Cancel(ctx, &acp.CancelNotification{SessionID: sid})
		d.perm.CancelAll()
	}()
	d.warn("acpterm: cancelling the turn (press Ctrl-C again to kill the agent)")
	return true
}

// kill ends the agent (with its cgroup or process group), the session's
// terminals and the call in flight at once. The terminals' process groups
// get SIGKILL now; their release, in shutdown, then takes their cgroups
// without a grace period to wait out.
func (d *driver) kill() {
	d.mu.Lock()
	d.killed = true
	if d.cancelCall != nil {
		d.cancelCall(errKilled)
	}
	sid := d.sid
	d.mu.Unlock()
	// The terminals first: the agent's death ends the turn, whose settle
	// would otherwise release them, with a kill grace, before this kills.
	if sid != "" {
		// Every command at once, SIGKILL, no kill grace: here, or on the
		// target (remote/kill_all, else the end of the connection).
		ctx, cancel := context.WithTimeout(context.Background(), killAllBound)
		_ = d.mgr.KillAll(ctx)
		cancel()
	}
	d.killAgent()
	d.perm.CancelAll()
}

// settle ends what the turn's last lines must show before they are
// shown: the permission questions still open, the session's terminals
// (released: killed if running) and the terminal manager, whose events the
// pump has all shown when settle returns. When hard the agent is killed
// first (it crashed, broke the protocol, or was killed already). The agent
// itself is left for shutdown.
func (d *driver) settle(hard bool) {
	d.mu.Lock()
	d.phase = phaseDone
	conn, sid := d.conn, d.sid
	d.mu.Unlock()
	d.perm.CancelAll()
	d.mcp.close() // its commands are released with its sessions
	if conn != nil && hard {
		conn.Kill()
	}
	if sid != "" {
		ctx, cancel := context.WithTimeout(context.Background(), remoteCallBound)
		if err := d.mgr.ReleaseSession(ctx, sid); err != nil && !errors.Is(err, remote.ErrDisconnected) {
			d.warn(fmt.Sprintf("acpterm: releasing the session's terminals: %v", err))
		}
		cancel()
	}
	// Close releases the terminals of any other session the agent named,
	// and ends the pump after the events already queued.
	_ = d.mgr.Close()
	<-d.pumped
}

// shutdown stops the agent, after settle, in order: stdin closed,
// SIGTERM, SIGKILL; kills what is left of its cgroup or process group,
// removes its TMPDIR and joins every goroutine of the run.
//
// settle and shutdown are bounded whatever the agent or a request handler
// does (barring processes stuck in the kernel): releasing the terminals
// takes at most KillGrace plus the 100 ms output drain; acp's Close of the
// agent at most agentStdinGrace (250 ms) after stdin is closed, 2 s after
// SIGTERM, 2 s after SIGKILL, then 1 s for request handlers, which are
// abandoned after that; the stderr pump 200 ms; the session/cancel sender
// 5 s, running since the interrupt. So after the turn ends, Run returns
// within KillGrace + 5.75 s; after a first interrupt, within CancelGrace +
// KillGrace + 7.5 s (the
// agent is killed when CancelGrace runs out, which makes its Close take 1 s
// at most); after a second one, which kills everything at once, within
// about 1.5 s. An agent that exits mid-turn ends the turn within 1 s of its
// exit however long what it left behind holds its stdout (acp.StartAgent),
// and is then shut down hard: within KillGrace + 1.5 s of its exit.
func (d *driver) shutdown() {
	d.mu.Lock()
	conn, errPipe := d.conn, d.errPipe
	d.mu.Unlock()
	if conn != nil {
		// Close kills what the agent left behind in its cgroup or group
		// (ConnOptions.Contain).
		if err := closeReport(conn.Close()); err != nil {
			d.warn("acpterm: " + err.Error())
		}
		// A descendant of the agent outside its group may hold its stderr
		// open; what it writes from now on is not waited for.
		_ = errPipe.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	}
	d.keyMask.Close()
	if err := d.agentSandbox.Cleanup(); err != nil {
		d.warn("acpterm: removing the agent's TMPDIR: " + err.Error())
	}
	close(d.stop)
	d.wg.Wait()
}

// closeReport is what of acp's Close error is worth a warning. An agent
// that had to be sent SIGTERM after its stdin closed is not: codex and
// claude, among others, stop that way every time. One that needed SIGKILL
// is (acp.ErrAgentKilled), and so is everything else Close reports.
func closeReport(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var keep []error
		for _, e := range j.Unwrap() {
			if e = closeReport(e); e != nil {
				keep = append(keep, e)
			}
		}
		return errors.Join(keep...)
	}
	if errors.Is(err, acp.ErrAgentSignalled) && !errors.Is(err, acp.ErrAgentKilled) {
		return nil
	}
	return err
}

// cancelledByUser reports whether the user interrupted the turn (Ctrl-C or
// SIGTERM while session/prompt was in flight).
func (d *driver) cancelledByUser() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.interrupts > 0
}

// requestQuit ends an interactive session: the prompt line stops waiting
// and the loop returns.
func (d *driver) requestQuit() {
	d.quitOnce.Do(func() { close(d.quit) })
}

// quitting reports whether requestQuit was called.
func (d *driver) quitting() bool {
	select {
	case <-d.quit:
		return true
	default:
		return false
	}
}
