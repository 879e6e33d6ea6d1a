package childexit

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Status is how a process ended: its exit code, or the signal that
// killed it (Signal is then not 0).
type Status struct {
	Code   int
	Signal syscall.Signal
}

// Values of siginfo_t.si_code for SIGCHLD.
const (
	cldKilled = 2
	cldDumped = 3
)

// statusOffset is the offset of si_status in siginfo_t: the preamble
// (si_signo, si_errno, si_code, padded to pointer alignment) then si_pid
// and si_uid.
const statusOffset = 3*4 + (unsafe.Sizeof(uintptr(0)) - 4) + 4 + 4

// Wait blocks until the child pid has exited and returns its status,
// leaving it a zombie for the caller to reap. pid must be a child of the
// calling process that nobody else reaps.
//
// It waits through a pidfd parked in the runtime's poller where the
// kernel has them (Linux 5.10 for PIDFD_NONBLOCK), else in a blocking
// waitid.
//
// Why not always a blocking waitid: each one pins an OS thread for as
// long as the child runs, and the P it ran on stays with that thread
// until the runtime's monitor takes it back. With many commands running
// that is a thread each, and the hand-offs delay the goroutines starting
// commands and reading their output on a busy machine (50 concurrent
// creates returned 10-15 % sooner without them; see the terminal
// package's BenchmarkConcurrent50).
func Wait(pid int) (Status, error) {
	info, ok := waitPidfd(pid)
	for !ok {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return Status{}, os.NewSyscallError("waitid", err)
		}
	}
	status := *(*int32)(unsafe.Add(unsafe.Pointer(&info), statusOffset))
	if info.Code == cldKilled || info.Code == cldDumped {
		return Status{Signal: syscall.Signal(status)}, nil
	}
	return Status{Code: int(status)}, nil
}

// waitPidfd waits for pid to exit through a non-blocking pidfd, and
// reports false when that cannot be had: the caller then waits the old
// way. The child is not reaped before the caller says so, so pid cannot
// name another process meanwhile.
func waitPidfd(pid int) (unix.Siginfo, bool) {
	var info unix.Siginfo
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return info, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return info, false
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			info = unix.Siginfo{}
			werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			if werr != unix.EINTR {
				break
			}
		}
		// Still running: WNOHANG leaves info zeroed, or a non-blocking
		// pidfd says EAGAIN. The pidfd turns readable when it exits.
		return !(werr == unix.EAGAIN || werr == nil && info.Signo == 0)
	})
	return info, err == nil && werr == nil
}
