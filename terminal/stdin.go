package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// MaxStdinWrite is the most bytes one Manager.Write takes. A larger write
// is refused (ErrInvalid): the host splits its input, so that no single
// call can hold a goroutine for an unbounded time on a command that reads
// slowly.
const MaxStdinWrite = 1 << 20

// ErrStdinClosed is wrapped, beside ErrInvalid, by the error of a Write to
// a terminal whose stdin is closed: by CloseStdin, because the command
// exited, or because it closed its own end.
var ErrStdinClosed = errors.New("stdin closed")

// stdinPipe is the write end of a command's stdin (Request.Stdin).
type stdinPipe struct {
	w      *os.File
	mu     sync.Mutex // one Write at a time, so that writes do not interleave
	closed atomic.Bool
	once   sync.Once
}

// openStdin returns the file the command gets as its stdin (the caller
// closes it once the command has started) and, with want, the pipe's
// write end that the terminal keeps.
func openStdin(want bool) (*os.File, *stdinPipe, error) {
	if !want {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, internalErr(err, "opening %s: %v", os.DevNull, err)
		}
		return f, nil, nil
	}
	r, w, err := os.Pipe() // close-on-exec: no other command inherits the write end
	if err != nil {
		return nil, nil, internalErr(err, "creating stdin pipe: %v", err)
	}
	return r, &stdinPipe{w: w}, nil
}

// close closes the write end: the command reads end of file once it has
// read what was written. Idempotent, nil-safe, and it does not wait for a
// Write in progress, which it ends (with ErrStdinClosed).
func (p *stdinPipe) close() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.closed.Store(true)
		_ = p.w.Close()
	})
}

// Write writes data to the command's stdin, for a terminal created with
// Request.Stdin. It returns once all of data is in the pipe (the command
// need not have read it), or with an error when ctx ends, the command
// exits or CloseStdin is called first; n is then what went in. data may
// be at most MaxStdinWrite bytes. Writing to a command that has exited,
// or after CloseStdin, fails with an error wrapping ErrInvalid and
// ErrStdinClosed; to a terminal without stdin, with ErrInvalid.
//
// On Windows a pipe has no write deadline: a Write that ctx ends there
// closes the command's stdin.
func (m *Manager) Write(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, data []byte) (int, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return 0, err
	}
	if t.in == nil {
		return 0, invalidf("terminal %q has no stdin to write: it was created without Request.Stdin", terminalID)
	}
	if len(data) > MaxStdinWrite {
		return 0, invalidf("%d bytes for terminal %q's stdin: at most %d bytes per write", len(data), terminalID, MaxStdinWrite)
	}
	if t.isDone() {
		return 0, stdinClosed(terminalID, "the command has exited")
	}
	return t.in.write(ctx, t.done, terminalID, data)
}

// CloseStdin closes the command's stdin, for a terminal created with
// Request.Stdin: the command reads end of file after what was written.
// Closing it again does nothing; it is closed at release in any case.
func (m *Manager) CloseStdin(sessionID acp.SessionID, terminalID acp.TerminalID) error {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return err
	}
	if t.in == nil {
		return invalidf("terminal %q has no stdin to close: it was created without Request.Stdin", terminalID)
	}
	t.in.close()
	return nil
}

// write writes data, giving up when ctx ends or done (the command's exit)
// is closed: a deadline in the past wakes a write blocked on a full pipe.
func (p *stdinPipe) write(ctx context.Context, done <-chan struct{}, id acp.TerminalID, data []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return 0, stdinClosed(id, "it was closed")
	}
	stop := make(chan struct{})
	var why atomic.Value // the reason a write was cut short: ctx's error or errExitedMeanwhile
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-stop:
			return
		case <-ctx.Done():
			why.Store(ctx.Err())
		case <-done:
			why.Store(errExitedMeanwhile)
		}
		if p.w.SetWriteDeadline(time.Now()) != nil {
			p.close() // no deadlines (Windows): closing is what ends the write
		}
	}()
	n, err := p.w.Write(data)
	close(stop)
	wg.Wait()
	_ = p.w.SetWriteDeadline(time.Time{})
	if err == nil {
		return n, nil
	}
	if r, ok := why.Load().(error); ok {
		if errors.Is(r, errExitedMeanwhile) {
			return n, stdinClosed(id, "the command exited before reading it all")
		}
		return n, r
	}
	switch {
	case p.closed.Load() || errors.Is(err, os.ErrClosed):
		return n, stdinClosed(id, "it was closed")
	case errors.Is(err, syscall.EPIPE):
		// Nothing holds the read end any more: the command closed it.
		return n, stdinClosed(id, "the command closed it")
	}
	return n, internalErr(err, "writing to terminal %q's stdin: %v", id, err)
}

var errExitedMeanwhile = errors.New("exited")

func stdinClosed(id acp.TerminalID, why string) error {
	return &Error{Kind: ErrInvalid, Message: fmt.Sprintf("terminal %q's stdin is closed: %s", id, why), Err: ErrStdinClosed}
}
