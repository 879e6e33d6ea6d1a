//go:build !linux

package acp

import (
	"os/exec"
	"syscall"
)

// Containment outside Linux is the process group alone (see StartAgent).

func setPdeathsig(*exec.Cmd) {}

func startContained(cmd *exec.Cmd, _ func(string, ...any)) (string, error) {
	return "", cmd.Start()
}

func (p *agentProcess) signalCgroup(syscall.Signal) {}

func (p *agentProcess) killRest() error {
	killGroupRest(p.cmd)
	return nil
}
