//go:build unix

package proctest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLockBuildsExcludes: while one holder has the builds' lock, another
// open file description (another test process, or another goroutine)
// cannot take it; once released, it can.
func TestLockBuildsExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockBuilds(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("while held: flock = %v, want EWOULDBLOCK", err)
	}
	unlock()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("after release: flock = %v", err)
	}
}
