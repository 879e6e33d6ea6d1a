//go:build !linux

package terminal

import (
	"errors"
	"os"
)

// startPTY refuses: PTY terminals run on Linux only, for now.
func (m *Manager) startPTY(pl plan) (*term, error) {
	return nil, invalidf("PTY terminals are supported on Linux only: run %q on pipes", pl.info.Argv[0])
}

// setWinsize is never reached: no PTY terminal starts here.
func setWinsize(*os.File, Size) error { return errors.ErrUnsupported }

// ptyEcho is never reached: no PTY terminal starts here.
func ptyEcho(*os.File) (bool, error) { return false, errors.ErrUnsupported }

// copyPTY is never reached with a pty: no PTY terminal starts here.
func copyPTY(f *os.File, write func([]byte)) ([]byte, error) { return copyFile(f, write) }
