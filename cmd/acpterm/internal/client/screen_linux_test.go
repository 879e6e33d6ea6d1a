//go:build linux

package client

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// openScreenPTY opens a pseudo-terminal whose output is copied into a
// screen until its terminal side is closed; copied is closed then. The
// test is skipped where no pseudo-terminal can be had.
func openScreenPTY(t *testing.T) (ptmx, tty *os.File, s *screen, copied chan struct{}) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	s = newScreen()
	copied = make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.Write(buf[:n])
			if err != nil {
				return // EIO once the terminal's side is closed
			}
		}
	}()
	return ptmx, tty, s, copied
}
