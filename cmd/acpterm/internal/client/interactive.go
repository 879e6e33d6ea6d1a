package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// promptLine is what the interactive session shows where a line is typed.
const promptLine = "› "

// interact runs the turns of an interactive session: each line typed at
// the prompt line is one turn in the session (or an in-session command,
// interactive_cmds.go), until the user quits with Ctrl-D, /exit, or Ctrl-C
// at an empty line (exit status 0). Ctrl-C during a turn cancels it, and a
// second one ends the session, killing the agent (130). An agent that
// dies or breaks the protocol ends it too (3).
func (d *driver) interact(ctx context.Context) (int, string) {
	c := &d.cfg
	ed := newLineEditor(d.ask, c.TTYOut, d.quit)
	ed.complete = d.completeCommand
	if f, ok := c.TTYOut.(*os.File); ok {
		ed.setWidth(TerminalSize(f))
	}
	// The agent may send updates (its slash commands) and log lines while
	// the prompt line waits: they are printed above it.
	d.sw.promptAware(ed)
	defer d.sw.promptAware(nil)
	d.mu.Lock()
	d.phase = phaseIdle
	sid := d.sid
	d.mu.Unlock()
	d.say(d.sw.st.Dim(fmt.Sprintf("session %s with %s · /help lists the commands · Ctrl-D ends the session",
		textsafe.Line(render.Clip(string(sid), 80)), textsafe.Line(render.Clip(filepath.Base(c.Agent[0]), 60)))))
	for {
		ed.pending = append(ed.pending, d.takeTypeAhead()...)
		line, err := ed.readLine(promptLine, nil)
		switch {
		case d.quitting():
			return ExitCancelled, ""
		case errors.Is(err, io.EOF):
			ed.leaveLine()
			return ExitOK, ""
		case err != nil:
			return ExitFailure, "reading the prompt line: " + err.Error()
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			prompt, end, code := d.command(ctx, line)
			if end {
				return code, ""
			}
			if !prompt {
				continue
			}
		}
		if end, code := d.interactiveTurn(ctx, line); end {
			return code, ""
		}
	}
}

// interactiveTurn runs one turn of an interactive session and shows how
// it ended. It reports whether the session is over, with the exit status:
// when the agent is gone (killed by a second Ctrl-C, exited, or broke the
// protocol).
func (d *driver) interactiveTurn(ctx context.Context, text string) (bool, int) {
	stopInput := d.startTurnInput(ctx)
	reason, code, msg := d.turn(ctx, text, phaseIdle)
	stopInput()
	if code == ExitOK && reason != "" {
		msg = d.confinedFailure() // said, but the session goes on
	}
	d.r.Finish(reason)
	d.jobs.endTurn(reason)
	if msg != "" {
		if reason == "" {
			d.r.Error(msg, code)
		}
		d.warn("acpterm: " + msg)
	}
	if d.agentGone() {
		if code == ExitOK {
			code = ExitAgent
		}
		return true, code
	}
	d.endTurn()
	d.sayRunning()
	return false, ExitOK
}

// agentGone reports whether the session cannot go on: the agent was
// killed, exited, or broke the protocol.
func (d *driver) agentGone() bool {
	d.mu.Lock()
	gone := d.killed || d.protoErr != nil
	d.mu.Unlock()
	if gone {
		return true
	}
	select {
	case <-d.conn.Exited():
		return true
	default:
		return false
	}
}

// endTurn puts the session back at its prompt line: the turn's
// interrupts, timeout and cancelled questions are over.
func (d *driver) endTurn() {
	d.mu.Lock()
	d.interrupts, d.timedOut = 0, false
	d.mu.Unlock()
	d.perm.Reset()
	select {
	case d.turnOver <- struct{}{}:
	default:
	}
	if d.cfg.TurnDone != nil {
		d.cfg.TurnDone()
	}
}

// say writes one line of acpterm's own to the terminal of the session.
func (d *driver) say(line string) {
	_, _ = io.WriteString(d.cfg.TTYOut, line+"\n")
}
