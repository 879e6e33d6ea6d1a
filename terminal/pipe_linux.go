package terminal

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyPipe is copyFile for the read end of a pipe made by os.Pipe, and
// reads it with raw read(2) calls.
//
// Why: every Go syscall tells the scheduler it may block, and when the
// process was idle — as it is each time the reader has emptied the pipe
// and waits for more — that wakes the runtime's monitor thread, a context
// switch per read. Against a command writing as fast as it can on a busy
// machine, those wakeups cost about a quarter of the throughput (see
// BenchmarkCapture and docs/performance.md). The descriptor is non-blocking, so read(2) returns at
// once, with data or EAGAIN, and needs none of that; waiting for data
// still goes through the runtime's poller, deadlines included.
func copyPipe(f *os.File, write func([]byte)) ([]byte, error) { return copyRaw(f, write, true) }

// copyRaw reads f, a non-blocking descriptor, with raw read(2) calls,
// waiting for data in the runtime's poller, and hands write each piece
// it read, until end of file, an error or f's read deadline; it returns
// the last buffer it read into and the error that ended the copy.
// shortEmpties says a short read took all f held (a pipe's does, a
// pty's does not): then it waits for the poller rather than read again.
func copyRaw(f *os.File, write func([]byte), shortEmpties bool) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil || !nonBlocking(rc) {
		return copyFile(f, write)
	}
	buf := make([]byte, minReadBuf)
	for {
		// One call ends at a read that filled buf, so that a deadline is
		// seen even when a writer never lets f run dry: the poller
		// checks it before each read and each wait.
		var n int
		var errno syscall.Errno
		err := rc.Read(func(fd uintptr) bool {
			for {
				r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
				switch {
				case e == syscall.EINTR:
					continue
				case e == syscall.EAGAIN:
					return false // wait for the poller
				case shortEmpties && e == 0 && r > 0 && int(r) < len(buf):
					// A short read took all the pipe held: hand it over
					// and wait for the poller, rather than read again
					// only to hear EAGAIN, a system call per wakeup saved
					// on a command that writes in small pieces. Within
					// this call the poller keeps what arrived since the
					// read, so the wait returns at once if there is more.
					write(buf[:r])
					return false
				}
				n, errno = int(r), e
				return true
			}
		})
		switch {
		case err != nil:
			return buf, err
		case errno != 0:
			return buf, &os.PathError{Op: "read", Path: f.Name(), Err: errno}
		case n == 0:
			return buf, io.EOF
		}
		write(buf[:n])
		buf = nextReadBuf(buf, n)
	}
}

// nonBlocking reports whether the descriptor has O_NONBLOCK set. A raw
// read of a blocking descriptor could stall a scheduler thread
// indefinitely, so copyPipe checks rather than assumes.
func nonBlocking(rc syscall.RawConn) bool {
	var flags int
	var errno syscall.Errno
	if rc.Control(func(fd uintptr) {
		r, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags, errno = int(r), e
	}) != nil || errno != 0 {
		return false
	}
	return flags&syscall.O_NONBLOCK != 0
}

// buffered is how many bytes the pipe fd holds (FIONREAD, which Linux
// calls TIOCINQ), or 0 when that cannot be known.
func buffered(fd uintptr) int {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
