//go:build linux

package acp

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/acpterm/acpterm/internal/cgroup"
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
	dir, err := cgroup.New("", "agent")
	if err != nil {
		// The usual case on a desktop: no writable tree. The process
		// group is the fallback, not worth a log line each time.
		return "", cmd.Start()
	}
	err = cgroup.Start(cmd, dir)
	if err == nil {
		return dir, nil
	}
	_ = unix.Rmdir(dir)
	if !cgroupRefused(err) || cmd.Cancel != nil {
		return "", err
	}
	// clone3 into a cgroup can fail where a plain start works (seccomp
	// filters that refuse clone3, a parent with controllers enabled): try
	// once without it. An exec.Cmd starts only once, so a copy of the
	// caller's fields takes its place (one made by CommandContext cannot
	// be copied, hence the Cancel check).
	logf("acp: starting the agent in cgroup %s: %v; using its process group only", dir, err)
	*cmd = exec.Cmd{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles,
		SysProcAttr: cmd.SysProcAttr, WaitDelay: cmd.WaitDelay,
	}
	return "", cmd.Start()
}

// cgroupRefused reports whether a start inside a cgroup failed in a way
// that a start without one may not.
func cgroupRefused(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EPERM, unix.EOPNOTSUPP, unix.EBUSY, unix.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
