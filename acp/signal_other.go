//go:build !unix

package acp

// signal stops the agent. Without Unix signals there is no polite request,
// so both steps kill the process.
func (p *agentProcess) signal(bool) { _ = p.cmd.Process.Kill() }
