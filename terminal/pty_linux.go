//go:build linux

package terminal

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/acpterm/acpterm/sandbox"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// startPTY is start for a PTY terminal: the command gets the pty's
// terminal end as its stdin, stdout, stderr and controlling terminal (in
// a session of its own), and the manager reads the master end through the
// screen model and writes the command's input to it.
func (m *Manager) startPTY(pl plan) (*term, error) {
	info := pl.info
	marker := string(info.TerminalID) + "." + m.nonce
	spec := m.spawnSpecFor(pl, marker)
	spec.pty = true
	master, tty, err := m.iso.openPTY(spec, *info.PTY)
	if err != nil {
		return nil, err
	}
	in, err := ptyInput(master)
	if err != nil {
		master.Close()
		tty.Close()
		return nil, internalErr(err, "opening a pty: %v", err)
	}
	spec.stdin, spec.stdout = tty, tty
	// The command has the tty: reads of master end in EIO once nothing
	// holds it.
	p, err := m.spawn(spec, &info, master, in, tty)
	if err != nil {
		return nil, err
	}
	limit := int(min(info.OutputByteLimit, math.MaxInt))
	return &term{
		m:          m,
		info:       info,
		key:        termKey(info.SessionID, info.TerminalID),
		proc:       p,
		pr:         master,
		tmp:        spec.tmp,
		in:         in,
		out:        newTail(limit),
		pty:        newPTYTerm(*info.PTY, limit),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}, nil
}

// openPTY opens the pty of a PTY terminal, of the given size. A
// sandboxed command's is opened in the devpts of its sandbox spawner's
// helper, so that the command finds it under its own /dev/pts (ttyname,
// tty) and may open /dev/tty; when the spawner has no devpts of its own,
// or there is no spawner, the host's is used, which the command can still
// read, write and control, but may not find by name.
func (iso *isolator) openPTY(s *spawnSpec, size Size) (master, tty *os.File, err error) {
	if sp := s.sandbox; sp != nil && (sp.Mode != sandbox.Off || sp.Network != sandbox.AllowNetwork) {
		slot, err := iso.spawner(spawnerKey(s), sp)
		switch {
		case err == nil:
			master, tty, err = slot.sp.OpenPTY()
			if err != nil && !errors.Is(err, sandbox.ErrNoPTY) {
				return nil, nil, internalErr(err, "opening a pty in the sandbox: %v", err)
			}
		case !errors.Is(err, errNoSpawner) && !errors.Is(err, sandbox.ErrSpawnerDead):
			return nil, nil, startErr(Info{Argv: s.argv}, &sandboxError{err})
		}
	}
	if master == nil {
		if master, tty, err = hostPTY(); err != nil {
			return nil, nil, internalErr(err, "opening a pty: %v", err)
		}
	}
	if err := setWinsize(master, size); err != nil {
		master.Close()
		tty.Close()
		return nil, nil, internalErr(err, "sizing the pty: %v", err)
	}
	return master, tty, nil
}

// hostPTY opens a pty in the host's devpts. creack/pty opens it; its
// master comes back in blocking mode (its ioctls go through File.Fd), so
// it is made non-blocking again and wrapped anew, for the runtime's
// poller: reads that deadlines can stop, as the output pipe's.
func hostPTY() (master, tty *os.File, err error) {
	m, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty, nil
}

// ptyInput is the terminal's input: a second descriptor of the master,
// which Manager.Write writes and CloseStdin closes without closing the
// one output is read from.
func ptyInput(master *os.File) (*stdinPipe, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(f uintptr) { fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	return &stdinPipe{w: os.NewFile(uintptr(fd), "/dev/ptmx")}, nil
}

// setWinsize sets the size of the pty whose master is f.
func setWinsize(f *os.File, size Size) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); err != nil {
		return err
	}
	if ioErr != nil {
		return fmt.Errorf("TIOCSWINSZ: %w", ioErr)
	}
	return nil
}

// ptyEcho reports whether the pty whose master is f echoes input. On
// Linux the master's termios is the terminal's, as its slave side set it.
func ptyEcho(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var tio *unix.Termios
	var ioErr error
	if err := rc.Control(func(fd uintptr) { tio, ioErr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
		return false, err
	}
	if ioErr != nil {
		return false, fmt.Errorf("TCGETS: %w", ioErr)
	}
	return tio.Lflag&unix.ECHO != 0, nil
}

// copyPTY reads a pty's master until end of file (EIO, once nothing holds
// its terminal end), an error or f's read deadline, and hands write each
// piece it read; it returns the last buffer it read into and the error
// that ended the copy.
//
// The reads are raw read(2) calls on the non-blocking descriptor, as
// copyPipe's (copyRaw), waiting for data in the runtime's poller. Why not
// os.File.Read: a read of a pty's master that finds the line discipline's
// buffer (4 KiB) empty waits in the kernel for the worker that fills it
// to finish its pass, and a Go system call that waits is one the runtime
// may take the reader's P from and hand back, with threads woken for it.
// On two CPUs, with the command and the line discipline's worker busy,
// that cost the capture a fifth of its speed: alternated at random with a
// bare pty, a PTY terminal capturing a progress bar through os.File.Read
// kept 88 % of it, and 107 % reading so, where the bare pty ran at about
// the same speed either way (docs/pty.md, "Figures"). The runtime is not
// told of the kernel's wait, which lasts one pass of the worker over at
// most 4 KiB.
//
// Each read is handed over at once rather than gathered until the master
// is empty: the terminal's work on it (the raw tail, the screen model)
// then runs while the worker refills the line discipline's buffer. Reads
// gathered up to 64 KiB cost less CPU, but the capture kept only 83 %.
//
// copyPipe's shortcut (a short read emptied the pipe, so wait for the
// poller) does not hold for a pty, whose reads return one buffer of the
// line discipline at a time: the rest would wait for the next write, or
// for ever. So the next read is tried at once.
func copyPTY(f *os.File, write func([]byte)) ([]byte, error) { return copyRaw(f, write, false) }
