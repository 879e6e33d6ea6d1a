//go:build unix

package terminal

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// shellCommand is the argv that runs line with the given shell.
func shellCommand(shell []string, line string) []string {
	return append(append([]string(nil), shell...), "-c", line)
}

// signalGroup sends sig to the process group led by pid and to pid itself
// (in case the leader moved to another group). Errors mean nobody was
// left to signal.
func signalGroup(pid int, sig syscall.Signal) {
	_ = unix.Kill(-pid, sig)
	_ = unix.Kill(pid, sig)
}

// signalName is the POSIX name of sig ("SIGKILL"), which is what agents
// expect; Go's syscall.Signal.String gives "killed".
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

// statusFromWait converts a reaped process's wait status.
func statusFromWait(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return exitStatus(0, ws.Signal())
	}
	return exitStatus(ws.ExitStatus(), 0)
}

// exitStatus is the status of a process that exited with code or, when
// sig is not 0, was killed by sig.
func exitStatus(code int, sig syscall.Signal) ExitStatus {
	if sig != 0 {
		name := signalName(sig)
		return ExitStatus{Signal: &name}
	}
	c := uint32(code)
	return ExitStatus{ExitCode: &c}
}
