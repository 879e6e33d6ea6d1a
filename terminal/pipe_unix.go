//go:build unix

package terminal

import (
	"os"
	"syscall"
)

// drainReady reads what is in the pipe right now, without waiting for
// more, up to budget bytes, and hands it to write.
func drainReady(f *os.File, buf []byte, budget int, write func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for budget > 0 {
			n, err := syscall.Read(int(fd), buf[:min(len(buf), budget)])
			if n <= 0 || err != nil {
				break // EAGAIN (empty), EOF or an error
			}
			write(buf[:n])
			budget -= n
		}
		return true // never wait for readiness
	})
}
