package client

import (
	"bytes"
	"context"
	"os"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// pumpEvents feeds terminal events to the renderer until the manager is
// closed and the last queued event is delivered. disp learns the ids of
// the terminals, so that display messages cannot name them.
func (d *driver) pumpEvents(sub terminal.Events, disp *render.DisplayTerminals) {
	defer d.wg.Done()
	defer sub.Close()
	defer d.shown.stop()
	// The commands the agent runs itself are confined as it is. It is
	// sandboxed before it starts, so before any display message.
	disp.SetAgentSandbox(func() *sandbox.Applied {
		if a := d.agentSandbox; a != nil && a.Confined() {
			return a
		}
		return nil
	})
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			return
		}
		if ev.Kind == terminal.EventCreated {
			disp.OwnTerminal(ev.TerminalID)
		}
		d.watch.TerminalEvent(ev)
		d.ties.TerminalEvent(ev)
		d.r.TerminalEvent(ev)
		switch ev.Kind {
		case terminal.EventCreated:
			d.shown.mark(ev.SessionID, ev.TerminalID)
		case terminal.EventReleased:
			d.shown.forget(ev.SessionID, ev.TerminalID)
		}
	}
}

// shownGate lets terminal/create answer only once the renderer has shown
// the new terminal, so that whatever the agent sends about it afterwards
// (the tool call that embeds it) comes after it in the output, as the
// agent sent them.
type shownGate struct {
	mu      sync.Mutex
	shown   map[shownKey]chan struct{} // closed once the renderer has it
	stopped chan struct{}              // closed when the pump ends
}

// shownKey names a terminal: its ID is unique within its session.
type shownKey struct {
	session  acp.SessionID
	terminal acp.TerminalID
}

func newShownGate() *shownGate {
	return &shownGate{shown: make(map[shownKey]chan struct{}), stopped: make(chan struct{})}
}

// ch is the channel of one terminal, made on first use. g.mu is held.
func (g *shownGate) ch(sessionID acp.SessionID, terminalID acp.TerminalID) chan struct{} {
	key := shownKey{sessionID, terminalID}
	c, ok := g.shown[key]
	if !ok {
		c = make(chan struct{})
		g.shown[key] = c
	}
	return c
}

func (g *shownGate) mark(sessionID acp.SessionID, terminalID acp.TerminalID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch(sessionID, terminalID)) // Created comes once per terminal
}

func (g *shownGate) forget(sessionID acp.SessionID, terminalID acp.TerminalID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.shown, shownKey{sessionID, terminalID})
}

func (g *shownGate) stop() { close(g.stopped) }

// wait returns once the terminal was shown, the pump ended or ctx ended.
func (g *shownGate) wait(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) {
	g.mu.Lock()
	c := g.ch(sessionID, terminalID)
	g.mu.Unlock()
	select {
	case <-c:
	case <-g.stopped:
	case <-ctx.Done():
	}
}

// stderrPump is how far pumpStderr has read the agent's stderr, so that
// the end of a turn can wait for what the agent wrote before its answer:
// stderr and the answer travel on two pipes, and the pump could still
// hold the lines of a noisy agent when the turn's end counts them.
type stderrPump struct {
	mu      sync.Mutex
	f       *os.File
	waiting bool          // the pipe was empty and everything read is handled
	moved   chan struct{} // closed, and replaced, when waiting changes
	done    bool          // the pipe has ended
}

// set records the pump's state; it wakes catchUp.
func (p *stderrPump) set(waiting, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting, p.done = waiting, done
	if p.moved != nil {
		close(p.moved)
	}
	p.moved = make(chan struct{})
}

// catchUp waits, up to within, until the pump has handled every byte
// written to the pipe so far: it is waiting in Read with nothing left in
// the pipe, or the pipe has ended.
func (p *stderrPump) catchUp(within time.Duration) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		// The pump cannot start a read while p.mu is held, so what
		// pending counts is all that it has not handled.
		p.mu.Lock()
		caught := p.f == nil || p.done || p.waiting && pending(p.f) == 0
		moved := p.moved
		p.mu.Unlock()
		if caught {
			return
		}
		select {
		case <-moved:
		case <-timer.C:
			return
		}
	}
}

// start records the pipe the pump reads.
func (p *stderrPump) start(f *os.File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.f = f
	p.moved = make(chan struct{})
}

// pumpStderr copies the agent's stderr to ours, line by line, so that its
// log lines do not cut through the live region.
func (d *driver) pumpStderr(f *os.File) {
	defer d.wg.Done()
	defer f.Close()
	defer d.errPump.set(false, true)
	buf := make([]byte, 32<<10)
	var line []byte
	for {
		n, err := d.errPump.read(f, buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				line = append(line, chunk...)
				if len(line) >= 64<<10 {
					d.agentStderr(line)
					line = line[:0]
				}
				break
			}
			line = append(line, chunk[:i]...)
			d.agentStderr(line)
			line = line[:0]
			chunk = chunk[i+1:]
		}
		if err != nil {
			if len(line) > 0 {
				d.agentStderr(line)
			}
			return
		}
	}
}

// tick drives the renderer's clock-based display.
func (d *driver) tick() {
	defer d.wg.Done()
	every := 500 * time.Millisecond
	if d.cfg.Text.Live {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.r.Tick()
		}
	}
}
