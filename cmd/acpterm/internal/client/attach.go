package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/jobs"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// Typing into the session's terminals (interactive sessions): /attach
// connects the keyboard to a running pty terminal (attach_view.go), /send
// sends a line to a terminal that takes input. The user's terminal is
// never handed to the command: acpterm reads the keys and writes them
// through the runtime (terminal.Input), as an agent's
// _acpterm/terminal/write would, and shows the command's rendered screen.

// inputTarget is a terminal of the session that takes input.
type inputTarget struct {
	info terminal.Info
	ref  int // its number in /jobs; 0 if the tracker lost it
}

// label names t as /jobs would: its number and its command.
func (t inputTarget) label() string {
	cmd := textsafe.Line(render.Clip(textsafe.CommandLine(t.info.Command, t.info.Args), maxJobLabel))
	if t.ref > 0 {
		return fmt.Sprintf("%d (%s)", t.ref, cmd)
	}
	return fmt.Sprintf("%s (%s)", t.info.TerminalID, cmd)
}

// input is the run's runtime as a terminal.Input, or nil with the line
// that says why there is none.
func (d *driver) input() (terminal.Input, string) {
	in, ok := d.mgr.(terminal.Input)
	if !ok {
		return nil, "acpterm: this run's terminals take no input"
	}
	return in, ""
}

// inputTargets lists the session's running terminals that take input,
// oldest first: pty ones for /attach (pty), those with a stdin pipe too
// for /send.
func (d *driver) inputTargets(ctx context.Context, pty bool) []inputTarget {
	d.mu.Lock()
	sid := d.sid
	d.mu.Unlock()
	var out []inputTarget
	for _, info := range d.mgr.Terminals(sid) {
		if info.PTY == nil && (pty || !info.Stdin) {
			continue
		}
		o, err := d.mgr.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: sid, TerminalID: info.TerminalID})
		if err != nil || o.ExitStatus != nil {
			continue
		}
		t := inputTarget{info: info}
		if it, ok := d.jobs.t.Find(string(info.TerminalID)); ok && it.Kind == jobs.ClientTerminal {
			t.ref = it.Ref
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b inputTarget) int { return a.info.Started.Compare(b.info.Started) })
	return out
}

// pickTarget is the terminal ref names among targets (its /jobs number or
// its ID), or with ref "" the only one; otherwise it says why not.
func (d *driver) pickTarget(targets []inputTarget, ref, what string) (inputTarget, bool) {
	if ref != "" {
		if t, ok := findTarget(d, targets, ref); ok {
			return t, true
		}
		d.say(fmt.Sprintf("acpterm: %s is no running terminal that %s; /jobs lists what runs", textsafe.Line(render.Clip(ref, 60)), what))
		return inputTarget{}, false
	}
	switch len(targets) {
	case 0:
		d.say(fmt.Sprintf("acpterm: no running terminal %s", what))
		return inputTarget{}, false
	case 1:
		return targets[0], true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "acpterm: more than one terminal %s; name one by its number:", what)
	for i, t := range targets {
		if i == maxJobsListed {
			fmt.Fprintf(&b, "\n  … and %d more", len(targets)-i)
			break
		}
		b.WriteString("\n  " + t.label())
	}
	d.say(b.String())
	return inputTarget{}, false
}

// attachCommand is /attach [ID].
func (d *driver) attachCommand(ctx context.Context, ref string) {
	in, why := d.input()
	if in == nil {
		d.say(why)
		return
	}
	if d.ask == nil || !d.ask.Terminal() {
		d.say("acpterm: /attach needs a terminal to type on")
		return
	}
	t, ok := d.pickTarget(d.inputTargets(ctx, true), ref, "runs on a pty")
	if !ok {
		return
	}
	d.attach(ctx, in, t)
}

// sendCommand is /send [ID] TEXT: TEXT and Enter to a terminal that takes
// input ("\n" for a pipe, "\r" for a pty, as its Enter key sends). The
// first word is the terminal when it names one; else TEXT goes to the
// only terminal that takes input.
func (d *driver) sendCommand(ctx context.Context, arg string) {
	in, why := d.input()
	if in == nil {
		d.say(why)
		return
	}
	targets := d.inputTargets(ctx, false)
	ref, text := "", arg
	if first, rest, _ := strings.Cut(arg, " "); first != "" {
		if _, ok := findTarget(d, targets, first); ok {
			ref, text = first, strings.TrimSpace(rest)
		}
	}
	t, ok := d.pickTarget(targets, ref, "takes input")
	if !ok {
		return
	}
	line := text + "\n"
	if t.info.PTY != nil {
		line = text + "\r"
	}
	wctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if _, err := in.Write(wctx, t.info.SessionID, t.info.TerminalID, []byte(line)); err != nil {
		d.say(fmt.Sprintf("acpterm: could not send to %s: %s", t.label(), textsafe.Line(render.Clip(err.Error(), maxWarnLine))))
		return
	}
	d.say(d.sw.st.Dim(fmt.Sprintf("sent %d bytes to %s", len(line), t.label())))
}

// sendTimeout bounds a /send to a command that does not read its input.
const sendTimeout = 10 * time.Second

// findTarget is the target ref names, without saying anything.
func findTarget(d *driver, targets []inputTarget, ref string) (inputTarget, bool) {
	id := ref
	if it, ok := d.jobs.t.Find(ref); ok && it.Kind == jobs.ClientTerminal {
		id = it.ID
	}
	for _, t := range targets {
		if string(t.info.TerminalID) == id {
			return t, true
		}
	}
	return inputTarget{}, false
}
