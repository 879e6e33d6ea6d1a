//go:build unix

package client

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
		ok = err == nil
	})
	return ok
}

// TerminalSize returns f's columns and rows, zeros when f is no terminal.
func TerminalSize(f *os.File) (cols, rows int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		if ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ); err == nil {
			cols, rows = int(ws.Col), int(ws.Row)
		}
	})
	return cols, rows
}

// OpenTTY opens the controlling terminal for questions and answers. Its
// reads can be interrupted by closing it, unlike a blocking stdin's.
func OpenTTY() (*os.File, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }
