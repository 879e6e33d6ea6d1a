//go:build linux

package client

import (
	"os"

	"golang.org/x/sys/unix"
)

// pending is the number of bytes written to the pipe f and not yet read
// (FIONREAD, which Linux calls TIOCINQ), or 0 when that cannot be known.
func pending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
