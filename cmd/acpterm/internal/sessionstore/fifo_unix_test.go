//go:build unix

package sessionstore

import (
	"testing"

	"golang.org/x/sys/unix"
)

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) bool {
	t.Helper()
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return true
}
