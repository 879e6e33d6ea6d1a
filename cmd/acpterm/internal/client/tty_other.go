//go:build !unix

package client

import (
	"errors"
	"os"
)

// IsTerminal reports whether f is a terminal; acpterm only detects
// terminals on Unix.
func IsTerminal(f *os.File) bool { return false }

// TerminalSize returns zeros outside Unix.
func TerminalSize(f *os.File) (cols, rows int) { return 0, 0 }

// OpenTTY is not supported outside Unix.
func OpenTTY() (*os.File, error) {
	return nil, errors.New("no controlling terminal support on this OS")
}
