//go:build unix

package acp

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup makes the agent the leader of a process group of its own, so
// that signals reach what it starts (and a Ctrl-C typed at the caller's
// terminal reaches the caller only).
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
}

// signal asks the agent to stop (SIGTERM) or kills it (SIGKILL). An agent
// in a cgroup of its own gets the signal with every member (SIGKILL through
// cgroup.kill, which reaches child cgroups too). An agent started as the
// leader of a process group of its own (SysProcAttr.Setpgid with Pgid 0)
// gets it with its whole group, so that the processes it started go with
// it; any other agent gets it alone, since its group may be the caller's.
func (p *agentProcess) signal(kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	p.signalCgroup(sig)
	// Once reaped, its pid, and so the group id, may be reused.
	if a := p.cmd.SysProcAttr; a != nil && a.Setpgid && a.Pgid == 0 && !p.reaped() {
		if unix.Kill(-p.cmd.Process.Pid, sig) == nil {
			return
		}
	}
	_ = p.cmd.Process.Signal(sig)
}

// killGroupRest kills what is left of the process group that the agent,
// which has exited, led. The group id stays reserved while any member
// lives, so this reaches the agent's leftovers; once none is left it could
// in principle name a newer group, a risk only cgroups remove.
func killGroupRest(cmd *exec.Cmd) {
	if a := cmd.SysProcAttr; a != nil && a.Setpgid && a.Pgid == 0 {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
}
