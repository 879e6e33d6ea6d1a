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
// refilling as fast as it is read; what the pipe held when the drain began
// (where buffered can tell) was written before the command exited, and is
// read whatever the deadline: a reader that a loaded machine runs only
// after the deadline must not lose a command's last output.
func drainReady(f *os.File, buf []byte, deadline time.Time, write func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		owed := buffered(fd)
		for owed > 0 || time.Now().Before(deadline) {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break // EAGAIN (empty), EOF or an error
			}
			write(buf[:n])
			owed -= n
			buf = nextReadBuf(buf, n)
		}
		return true // never wait for readiness
	})
}
