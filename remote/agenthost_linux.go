//go:build linux

package remote

import (
	"os/exec"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
)

// setHostDeathSig has the kernel kill the agent when the host dies (a
// SIGKILLed exec server cannot end it); its cgroup, left behind, is
// removed as stale by the next one made.
func setHostDeathSig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// startInCgroup starts cmd in a cgroup of its own when the tree is
// writable, else as it is, and returns the cgroup ("" for none).
func startInCgroup(cmd *exec.Cmd, logf func(string, ...any)) (string, error) {
	return cgroup.StartNew(cmd, "agent", "the agent", func(format string, args ...any) { logf("agent host: "+format, args...) })
}

func signalCgroup(dir string, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = cgroup.Kill(dir)
		return
	}
	cgroup.Signal(dir, sig)
}

func removeCgroup(dir string) error { return cgroup.RemoveTree(dir) }
