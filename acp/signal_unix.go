//go:build unix

package acp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signal asks the agent to stop (SIGTERM) or kills it (SIGKILL). An agent
// started as the leader of a process group of its own (SysProcAttr.Setpgid
// with Pgid 0) gets the signal with its whole group, so that the processes
// it started go with it; any other agent gets it alone, since its group
// may be the caller's.
func (p *agentProcess) signal(kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	if a := p.cmd.SysProcAttr; a != nil && a.Setpgid && a.Pgid == 0 {
		select {
		case <-p.exited:
			// Reaped: its pid, and so the group id, may be reused.
		default:
			if unix.Kill(-p.cmd.Process.Pid, sig) == nil {
				return
			}
		}
	}
	_ = p.cmd.Process.Signal(sig)
}
