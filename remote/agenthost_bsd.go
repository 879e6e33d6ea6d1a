//go:build unix && !linux

package remote

import (
	"os/exec"
	"syscall"
)

// Without cgroups or a parent-death signal, the process group is the
// agent's containment: a descendant that calls setsid leaves it.

func setHostDeathSig(*syscall.SysProcAttr) {}

func startInCgroup(cmd *exec.Cmd, _ func(string, ...any)) (string, error) {
	return "", cmd.Start()
}

func signalCgroup(string, syscall.Signal) {}

func removeCgroup(string) error { return nil }
