//go:build unix

package acp

import "syscall"

// signal asks the agent to stop (SIGTERM) or kills it (SIGKILL).
func (p *agentProcess) signal(kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = p.cmd.Process.Signal(sig)
}
