//go:build unix

package remote

import (
	"os/exec"
	"syscall"
)

type hostSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// hosted is the agent HostAgent runs: the leader of its own process group
// and, where one could be made, the one member of a cgroup of its own.
type hosted struct {
	cmd    *exec.Cmd
	cgroup string // "" for none
}

func startHosted(cmd *exec.Cmd, logf func(string, ...any)) (*hosted, error) {
	// Added to what the command has: a sandbox's namespaces.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setHostDeathSig(cmd.SysProcAttr)
	dir, err := startInCgroup(cmd, logf)
	if err != nil {
		return nil, err
	}
	return &hosted{cmd: cmd, cgroup: dir}, nil
}

// signal sends sig to the agent's cgroup, or its process group.
func (h *hosted) signal(sig hostSignal) {
	if h.cgroup != "" {
		signalCgroup(h.cgroup, sig)
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, sig)
}

// killRest kills what the exited agent left in its process group and its
// cgroup, and removes the cgroup.
func (h *hosted) killRest() error {
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	if h.cgroup != "" {
		return removeCgroup(h.cgroup)
	}
	return nil
}

// signalOf is the signal that ended the process, if one did.
func signalOf(ee *exec.ExitError) (int, bool) {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}
