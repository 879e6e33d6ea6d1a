package terminal

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/screen"
)

// PTY terminals: a command run on a pseudo-terminal (Request.PTY), whose
// output is rendered as a screen would show it.

// Size is a terminal's size in character cells, as ACP v2's TerminalSize
// (acp.V2TerminalSize) words it.
type Size struct {
	Cols uint16
	Rows uint16
}

// The size of a PTY terminal whose Request.PTY leaves it zero, and the
// largest size one may have.
const (
	DefaultCols = 80
	DefaultRows = 24
	MaxCols     = screen.MaxCols
	MaxRows     = screen.MaxRows
)

// ptyTerm is what a PTY terminal has beyond a pipe one.
//
// Output is rendered by a goroutine of its own, so that the screen model
// runs beside the reads of the master rather than between them: the
// reader queues what it read, and the renderer takes the queue. The
// reader renders itself when the queue holds maxPending bytes, which
// bounds the queue, and Output and Resize render what is queued first.
// Locks, in order: the terminal's mutex, smu, pmu.
type ptyTerm struct {
	size Size // guarded by the terminal's mutex

	smu   sync.Mutex // held while rendering
	scr   *screen.Screen
	spare []byte // the queue's other buffer

	pmu     sync.Mutex
	pending []byte        // read, not yet rendered
	wake    chan struct{} // something is queued
}

// The renderer is woken once wakePending bytes are queued, not for each
// read: a wakeup costs more than rendering a read's few KiB, and Output
// renders what is queued anyway. maxPending bounds the queue.
const (
	wakePending = 32 << 10
	maxPending  = 256 << 10
)

func newPTYTerm(size Size, limit int) *ptyTerm {
	return &ptyTerm{size: size, scr: screen.New(int(size.Cols), int(size.Rows), limit), wake: make(chan struct{}, 1)}
}

// queue hands b, which the caller may reuse, to the renderer.
func (p *ptyTerm) queue(b []byte) {
	p.pmu.Lock()
	p.pending = append(p.pending, b...)
	n := len(p.pending)
	p.pmu.Unlock()
	switch {
	case n >= maxPending:
		p.flush()
		return
	case n < wakePending:
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// flush renders what is queued.
func (p *ptyTerm) flush() {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.flushLocked()
}

func (p *ptyTerm) flushLocked() {
	p.pmu.Lock()
	b := p.pending
	p.pending = p.spare[:0]
	p.pmu.Unlock()
	p.scr.Write(b)
	p.spare = b
}

// renderLoop renders what the reader queues until readerDone is closed,
// and then what is left.
func (p *ptyTerm) renderLoop(readerDone <-chan struct{}) {
	for {
		select {
		case <-p.wake:
			p.flush()
		case <-readerDone:
			p.flush()
			return
		}
	}
}

// text renders the output (see the package doc).
func (p *ptyTerm) text() (string, bool) {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.flushLocked()
	return p.scr.Text()
}

// resize renders what is queued at the old size, then resizes the screen.
func (p *ptyTerm) resize(size Size) {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.flushLocked()
	p.scr.Resize(int(size.Cols), int(size.Rows))
	p.size = size
}

// copyPTY reads a pty's master: copyFile, whose reads go on until the
// master is empty. copyPipe's shortcut (a short read emptied the pipe, so
// wait for more) does not hold for a pty, whose reads return one buffer
// of the line discipline at a time: the rest would wait for the next
// write, or for ever.
func copyPTY(f *os.File, write func([]byte)) ([]byte, error) { return copyFile(f, write) }

// free drops the screen's text, when nothing is retained (see finish).
func (p *ptyTerm) free() {
	if p != nil {
		p.smu.Lock()
		p.scr = screen.New(1, 1, 0)
		p.smu.Unlock()
	}
}

// validatePTY checks the size a request asks for; a zero field means the
// default.
func validatePTY(size *Size) error {
	if size == nil {
		return nil
	}
	if size.Cols > MaxCols || size.Rows > MaxRows {
		return invalidf("pty size %dx%d: at most %dx%d", size.Cols, size.Rows, MaxCols, MaxRows)
	}
	return nil
}

// ptySize is the size a PTY terminal starts with: size with its zero
// fields set to the defaults; nil for a pipe terminal.
func ptySize(size *Size) *Size {
	if size == nil {
		return nil
	}
	s := *size
	if s.Cols == 0 {
		s.Cols = DefaultCols
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	return &s
}

// ptyTERM is the TERM a PTY terminal's command gets unless its request
// sets one: what the host's TERM describes is the host's own terminal,
// not this one. xterm's sequences are what the screen model reads.
const ptyTERM = "xterm-256color"

// withTERM sets TERM in env for a PTY terminal, unless the request's env
// sets it; a pipe terminal's env is left as it is.
func withTERM(info Info, env []string) []string {
	if info.PTY == nil || slices.ContainsFunc(info.Env, func(v EnvVar) bool { return envKey(v.Name) == envKey("TERM") }) {
		return env
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return envKey(name) == envKey("TERM")
	})
	return append(env, "TERM="+ptyTERM)
}

// Resize changes the size of a PTY terminal (Request.PTY): the kernel
// tells the command's foreground process group (SIGWINCH), and output is
// rendered at the new size from now on. A size field of 0 keeps that
// dimension. Resizing a pipe terminal fails with ErrInvalid.
func (m *Manager) Resize(sessionID acp.SessionID, terminalID acp.TerminalID, size Size) error {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return err
	}
	if t.pty == nil {
		return invalidf("terminal %q is not on a pty: it was created without Request.PTY", terminalID)
	}
	if err := validatePTY(&size); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if size.Cols == 0 {
		size.Cols = t.pty.size.Cols
	}
	if size.Rows == 0 {
		size.Rows = t.pty.size.Rows
	}
	if err := setWinsize(t.pr, size); err != nil {
		return internalErr(err, "resizing terminal %q: %v", terminalID, err)
	}
	t.pty.resize(size)
	return nil
}

// PTYSize returns the current size of a PTY terminal, and false for a
// pipe terminal.
func (m *Manager) PTYSize(sessionID acp.SessionID, terminalID acp.TerminalID) (Size, bool, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return Size{}, false, err
	}
	if t.pty == nil {
		return Size{}, false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pty.size, true, nil
}
