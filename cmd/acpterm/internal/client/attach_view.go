package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
	"github.com/charmbracelet/x/ansi"
)

// detachKey ends /attach: Ctrl-], telnet's escape key, which programs
// seldom need (Ctrl-C and Ctrl-D go to the command).
const (
	detachKey     = 0x1d
	detachKeyName = "Ctrl-]"
)

// acpterm's own sequences while attached: the alternate screen (the
// session's scrollback is left as it was), home, erase to the end of the
// line and of the screen.
const (
	altScreenOn  = "\x1b[?1049h"
	altScreenOff = "\x1b[?1049l"
	cursorHome   = "\x1b[H"
	eraseLine    = "\x1b[K"
	eraseBelow   = "\x1b[J"
)

// writeTimeout bounds one write of typed keys to a command that does not
// read them, so that the detach key still works.
const writeTimeout = 5 * time.Second

// attachment is one /attach: the keyboard connected to a pty terminal.
type attachment struct {
	d          *driver
	in         terminal.Input
	t          inputTarget
	out        io.Writer
	cols, rows int                  // the user's terminal
	status     *terminal.ExitStatus // set once the command has exited
	note       string               // a problem to show in the header
	drawn      time.Time            // the last draw
}

// drawInterval is the shortest time between two draws for output: a
// command that writes fast is shown at a steady rate, not read whole for
// every write.
const drawInterval = 30 * time.Millisecond

// attach connects the keyboard to t until the user detaches, and then
// says how it ended. The terminal is restored on every way out: raw mode,
// the alternate screen, the pty's size, the renderer's live region.
func (d *driver) attach(ctx context.Context, in terminal.Input, t inputTarget) {
	why := d.attached(ctx, in, t)
	d.say(d.sw.st.Dim(fmt.Sprintf("detached from %s: %s", t.label(), why)))
}

func (d *driver) attached(ctx context.Context, in terminal.Input, t inputTarget) string {
	sub, err := d.mgr.Subscribe(t.info.SessionID, t.info.TerminalID)
	if err != nil {
		return "could not follow it: " + textsafe.Line(err.Error())
	}
	defer sub.Close()
	// The keyboard is the attachment's: a question the agent asks
	// meanwhile waits for the detach (the header says so).
	if !d.ask.Acquire(ctx, d.quit) {
		return "the session is ending"
	}
	defer d.ask.Release()
	resume := d.sw.Suspend() // the renderer holds what comes meanwhile
	defer resume()
	restore, err := d.ask.Raw()
	if err != nil {
		return "could not put the terminal in raw mode: " + textsafe.Line(err.Error())
	}
	defer restore()
	a := &attachment{d: d, in: in, t: t, out: d.cfg.TTYOut}
	_, _ = io.WriteString(a.out, altScreenOn)
	defer io.WriteString(a.out, altScreenOff)
	orig := a.currentSize()
	defer a.resize(orig)
	a.fit()
	return a.loop(ctx, sub)
}

// loop draws the terminal's screen and forwards keys until the user
// detaches or the terminal goes, and returns why it ended. Its two
// readers, of keys and of events, are joined before it returns.
func (a *attachment) loop(ctx context.Context, sub terminal.Events) string {
	ctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	keys := make(chan []byte)
	evs := make(chan terminal.Event)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(keys)
		for {
			k, err := a.d.ask.NextKeys(stop, nil)
			if err != nil {
				return
			}
			select {
			case keys <- k:
			case <-stop:
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		defer close(evs)
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return
			}
			ev.Data = nil // the screen is read whole (Output): not kept
			select {
			case evs <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		close(stop)
		cancel()
		wg.Wait()
	}()
	winch, stopWinch := notifyResize()
	defer stopWinch()
	a.noteQuestion()
	a.draw(ctx)
	// Output redraws at most once a frame: each reads the whole screen.
	var frame <-chan time.Time
	for {
		select {
		case k, ok := <-keys:
			if !ok {
				return "end of input"
			}
			if done := a.typed(ctx, k); done {
				return a.ending()
			}
		case ev, ok := <-evs:
			if why := a.event(ev, ok); why != "" {
				return why
			}
			if why := a.drain(evs); why != "" {
				return why
			}
			if frame == nil {
				frame = time.After(max(0, drawInterval-time.Since(a.drawn)))
			}
		case <-frame:
			frame = nil
			a.draw(ctx)
		case <-winch:
			a.fit()
			a.draw(ctx)
		case <-a.d.ask.QuestionWaits():
			a.noteQuestion()
			a.draw(ctx)
		case <-a.d.quit:
			return "the session is ending"
		case <-ctx.Done():
			return "the session is ending"
		}
	}
}

// noteQuestion says in the header that a question waits (the token may
// be the attachment's own, from taking the keyboard).
func (a *attachment) noteQuestion() {
	if a.d.ask.QuestionWaiting() {
		a.note = "the agent asks a question: detach to answer it"
	}
}

// ending says how the terminal stands when the user detaches.
func (a *attachment) ending() string {
	if a.status != nil {
		return "the command exited (" + a.status.String() + ")"
	}
	return "it still runs"
}

// event notes what an event changes, and says why the attachment ends
// when it does.
func (a *attachment) event(ev terminal.Event, ok bool) string {
	if !ok {
		return "the terminal is gone"
	}
	switch ev.Kind {
	case terminal.EventExited:
		if ev.Lost != "" {
			return textsafe.Line(ev.Lost)
		}
		st := terminal.ExitStatus{}
		if ev.Status != nil {
			st = *ev.Status
		}
		a.status = &st
	case terminal.EventReleased:
		return "the agent released the terminal"
	}
	return ""
}

// drain takes the events already queued, so that a burst of output is
// drawn once.
func (a *attachment) drain(evs <-chan terminal.Event) string {
	for {
		select {
		case ev, ok := <-evs:
			if why := a.event(ev, ok); why != "" {
				return why
			}
		default:
			return ""
		}
	}
}

// typed forwards keys to the command, up to the detach key; once the
// command has exited any key detaches. It reports whether to detach.
func (a *attachment) typed(ctx context.Context, k []byte) bool {
	if a.status != nil {
		return true
	}
	i := strings.IndexByte(string(k), detachKey)
	send := k
	if i >= 0 {
		send = k[:i]
	}
	if len(send) > 0 {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		_, err := a.in.Write(wctx, a.t.info.SessionID, a.t.info.TerminalID, send)
		cancel()
		if err != nil {
			a.note = "input not taken: " + textsafe.Line(err.Error())
			a.draw(ctx)
		}
	}
	return i >= 0
}

// userSize is the user's terminal size, 80×24 when it cannot be told.
func (a *attachment) userSize() (int, int) {
	cols, rows := 0, 0
	if f, ok := a.out.(*os.File); ok {
		cols, rows = TerminalSize(f)
	}
	if cols < 10 || rows < 3 {
		return terminal.DefaultCols, terminal.DefaultRows
	}
	return cols, rows
}

// fit gives the command the user's terminal, less acpterm's header row.
func (a *attachment) fit() {
	a.cols, a.rows = a.userSize()
	a.resize(terminal.Size{Cols: uint16(min(a.cols, terminal.MaxCols)), Rows: uint16(min(a.rows-1, terminal.MaxRows))})
}

func (a *attachment) resize(size terminal.Size) {
	if size.Cols == 0 || size.Rows == 0 || a.status != nil {
		return
	}
	if err := a.in.Resize(a.t.info.SessionID, a.t.info.TerminalID, size); err != nil {
		a.note = "not resized: " + textsafe.Line(err.Error())
	}
}

// ptyEchoer is a runtime that tells whether a pty terminal echoes what is
// typed (terminal.Manager).
type ptyEchoer interface {
	PTYEcho(acp.SessionID, acp.TerminalID) (bool, error)
}

// echoOff reports that the command turned echo off, as a password prompt
// does: what the user types shows nowhere, and the header says so.
func (a *attachment) echoOff() bool {
	e, ok := a.d.mgr.(ptyEchoer)
	if !ok {
		return false
	}
	on, err := e.PTYEcho(a.t.info.SessionID, a.t.info.TerminalID)
	return err == nil && !on
}

// ptySizer is a runtime that tells a pty terminal's current size
// (terminal.Manager).
type ptySizer interface {
	PTYSize(acp.SessionID, acp.TerminalID) (terminal.Size, bool, error)
}

// currentSize is the pty's size before the attachment, to give back after
// it: the runtime's if it tells, else the size it was created with.
func (a *attachment) currentSize() terminal.Size {
	if s, ok := a.d.mgr.(ptySizer); ok {
		if size, pty, err := s.PTYSize(a.t.info.SessionID, a.t.info.TerminalID); err == nil && pty {
			return size
		}
	}
	if a.t.info.PTY != nil {
		return *a.t.info.PTY
	}
	return terminal.Size{}
}

// draw shows acpterm's header row, then the newest rows of the command's
// rendered screen: plain text, sanitized, clipped to the width. The
// cursor is left at the end of the last row, where a prompt waits.
func (a *attachment) draw(ctx context.Context) {
	text := ""
	out, err := a.d.mgr.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: a.t.info.SessionID, TerminalID: a.t.info.TerminalID})
	if err == nil {
		text = out.Output
	}
	a.drawn = time.Now()
	var b strings.Builder
	b.WriteString(cursorHome)
	b.WriteString(a.header())
	for _, row := range lastRows(text, a.rows-1) {
		b.WriteString(eraseLine + "\r\n")
		b.WriteString(ansi.Truncate(textsafe.Line(row), a.cols, ""))
	}
	b.WriteString(eraseLine + eraseBelow)
	_, _ = io.WriteString(a.out, b.String())
}

// header is the first row: how to leave first, so that a narrow
// terminal cuts the command's name rather than that; then what is
// attached.
func (a *attachment) header() string {
	h := "acpterm · "
	switch {
	case a.status != nil:
		h += "exited (" + a.status.String() + "): any key detaches"
	default:
		h += detachKeyName + " detaches, other keys go to the command"
	}
	if a.status == nil && a.echoOff() {
		h += " · typing is hidden"
	}
	if a.note != "" {
		h += " · " + a.note
	}
	h += " · attached to " + a.t.label()
	return a.d.sw.st.Bold(ansi.Truncate(h, a.cols, "…"))
}

// lastRows is the last n lines of text, without the empty one after a
// final newline.
func lastRows(text string, n int) []string {
	text = strings.TrimSuffix(text, "\n")
	if n <= 0 || text == "" {
		return nil
	}
	i := len(text)
	for range n {
		j := strings.LastIndexByte(text[:i], '\n')
		if j < 0 {
			return strings.Split(text, "\n")
		}
		i = j
	}
	return strings.Split(text[i+1:], "\n")
}
