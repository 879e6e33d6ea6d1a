package terminal

import (
	"slices"
	"strings"

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

// ptyTerm is what a PTY terminal has beyond a pipe one. The terminal's
// mutex guards it.
//
// The reader renders what it reads, as it reads it. A read of the master
// is a few KiB, which the screen model renders in a few microseconds.
// Handing reads to a goroutine of its own, as earlier releases did, cost
// more CPU than that in wakeups and in the scheduler's polling, and on a
// machine of few CPUs that CPU is taken from the kernel's line discipline
// and the command, which keep the pty full: measured on two CPUs, the
// capture of a progress bar kept up with the bare pty less well.
type ptyTerm struct {
	size Size
	scr  *screen.Screen
}

func newPTYTerm(size Size, limit int) *ptyTerm {
	return &ptyTerm{size: size, scr: screen.New(int(size.Cols), int(size.Rows), limit)}
}

// render takes what the reader read.
func (p *ptyTerm) render(b []byte) { p.scr.Write(b) }

// text renders the output (see the package doc).
func (p *ptyTerm) text() (string, bool) { return p.scr.Text() }

// resize resizes the screen: what was read so far was rendered at the
// old size.
func (p *ptyTerm) resize(size Size) {
	p.scr.Resize(int(size.Cols), int(size.Rows))
	p.size = size
}

// free drops the screen's text, when nothing is retained (see finish).
func (p *ptyTerm) free() {
	if p != nil {
		p.scr = screen.New(1, 1, 0)
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
