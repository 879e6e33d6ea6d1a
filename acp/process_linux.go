//go:build linux

package acp

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"golang.org/x/sys/unix"
)

// setPdeathsig has the kernel kill the agent when its parent dies: a
// caller that is SIGKILLed cannot shut it down. (What the agent started is
// not covered; its cgroup is removed as stale by the next caller.)
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// startContained starts cmd inside a new cgroup when the tree is writable,
// else as it is, and returns the cgroup directory ("" for none).
func startContained(cmd *exec.Cmd, logf func(string, ...any)) (string, error) {
	return cgroup.StartNew(cmd, "agent", "the agent", func(format string, args ...any) { logf("acp: "+format, args...) })
}

// signalCgroup sends sig to the members of the agent's cgroup; SIGKILL
// goes through cgroup.kill, which also takes child cgroups.
func (p *agentProcess) signalCgroup(sig syscall.Signal) {
	if p.cgroup == "" {
		return
	}
	if sig == syscall.SIGKILL {
		_ = cgroup.Kill(p.cgroup)
		return
	}
	cgroup.Signal(p.cgroup, sig)
}

// killRest kills what the agent left behind after it exited and removes
// its cgroup.
func (p *agentProcess) killRest() error {
	if p.cgroup == "" {
		killGroupRest(p.cmd)
		return nil
	}
	return cgroup.RemoveTree(p.cgroup)
}

// watchExit returns a channel closed when process pid, a child of ours not
// reaped yet, exits: it polls a pidfd of the process, which the kernel
// makes readable at the exit, in the runtime's poller (no thread is held),
// and asks waitid with WNOWAIT, so that the zombie stays for cmd.Wait to
// reap. This is the exit itself, which Wait can report late (it waits for
// the copy of a cmd.Stderr that is not a file). Where no pidfd can be had
// (a kernel before 5.3), it returns exited, Wait's channel.
func watchExit(pid int, exited <-chan struct{}) <-chan struct{} {
	fd, err := unix.PidfdOpen(pid, unix.O_NONBLOCK) // PIDFD_NONBLOCK is O_NONBLOCK
	if err != nil {
		return exited
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return exited
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		defer f.Close()
		// Read calls the function until it returns true, waiting for
		// the pidfd to be readable in between; nothing closes f while
		// it waits, so it returns only once the process has exited.
		_ = rc.Read(func(fd uintptr) bool {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			switch {
			case err == unix.EINTR:
				return false
			case err != nil:
				// ECHILD: reaped already, so it has exited.
				return true
			}
			// With WNOHANG, a process still running leaves
			// si_signo zero.
			return info.Signo != 0
		})
	}()
	return gone
}
