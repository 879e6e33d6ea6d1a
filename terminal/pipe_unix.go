//go:build unix

package terminal

import (
	"os"
	"syscall"
	"time"
)

// drainReady reads what is in the pipe, without waiting for more, until
// it is empty, at end of file or when deadline passes, and hands it to
// write. The deadline bounds the drain of a pipe that descendants keep
// refilling as fast as it is read.
func drainReady(f *os.File, buf []byte, deadline time.Time, write func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for time.Now().Before(deadline) {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break // EAGAIN (empty), EOF or an error
			}
			write(buf[:n])
			buf = nextReadBuf(buf, n)
		}
		return true // never wait for readiness
	})
}
