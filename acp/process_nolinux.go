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

// watchExit returns Wait's channel: without pidfds, the exit is seen when
// the agent is reaped (see StartAgent).
func watchExit(_ int, exited <-chan struct{}) <-chan struct{} { return exited }
