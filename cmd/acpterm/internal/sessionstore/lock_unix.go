//go:build unix

package sessionstore

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path (created if need be), waiting
// at most wait for another holder, and returns the function that drops
// it. The lock goes with the process, so a killed acpterm never leaves
// the store locked.
func lockFile(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		var err error
		rc, cerr := f.SyscallConn()
		if cerr != nil {
			f.Close()
			return nil, cerr
		}
		if cerr := rc.Control(func(fd uintptr) { err = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); cerr != nil {
			err = cerr
		}
		if err == nil {
			return func() { f.Close() }, nil // closing drops the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, err
		}
		// The holder is another acpterm writing a few kilobytes: a short,
		// growing pause until it is done.
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
