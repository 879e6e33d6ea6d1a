//go:build linux

package client

import (
	"io"
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

// read reads f into buf as f.Read does, and marks the pump waiting only
// between a read that found the pipe empty and the next read: a blocking
// Read would leave it marked while the kernel hands over bytes that are
// not handled yet. A pipe that is not in the runtime's poller is read
// plainly, and never marked.
func (p *stderrPump) read(f *os.File, buf []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Read(buf)
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		p.set(false, false)
		for {
			n, rerr = unix.Read(int(fd), buf)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN {
			p.set(true, false)
			return false // the runtime waits until the pipe is readable
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &os.PathError{Op: "read", Path: f.Name(), Err: rerr}
	case n == 0 && len(buf) > 0:
		return 0, io.EOF
	}
	return n, nil
}
