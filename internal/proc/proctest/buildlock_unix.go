//go:build unix

package proctest

import (
	"os"
	"syscall"
)

// lockBuilds takes the lock file in the shared build directory, waiting
// for another process's build to end, and returns its release.
func lockBuilds(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	// Closing the file releases the lock.
	return func() { f.Close() }, nil
}
