//go:build linux

package remote

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"golang.org/x/sys/unix"
)

// setHostDeathSig has the kernel kill the agent when the host dies (a
// SIGKILLed exec server cannot end it); its cgroup, left behind, is
// removed as stale by the next one made.
func setHostDeathSig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// startInCgroup starts cmd in a cgroup of its own when the tree is
// writable, else as it is, and returns the cgroup ("" for none).
func startInCgroup(cmd *exec.Cmd, logf func(string, ...any)) (string, error) {
	dir, err := cgroup.New("", "agent")
	if err != nil {
		return "", cmd.Start()
	}
	if err = cgroup.Start(cmd, dir); err == nil {
		return dir, nil
	}
	_ = unix.Rmdir(dir)
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EOPNOTSUPP) {
		return "", err
	}
	// clone3 into a cgroup can be refused where a plain start is not; an
	// exec.Cmd starts once, so a copy of it takes its place.
	logf("agent host: starting the agent in cgroup %s: %v; using its process group only", dir, err)
	*cmd = exec.Cmd{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr,
	}
	return "", cmd.Start()
}

func signalCgroup(dir string, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = cgroup.Kill(dir)
		return
	}
	cgroup.Signal(dir, sig)
}

func removeCgroup(dir string) error { return cgroup.RemoveTree(dir) }
