//go:build !unix

package acp

import "os/exec"

// ownGroup does nothing: process groups are a Unix notion.
func ownGroup(*exec.Cmd) {}

// signal stops the agent. Without Unix signals there is no polite request,
// so both steps kill the process.
func (p *agentProcess) signal(bool) { _ = p.cmd.Process.Kill() }

// killGroupRest does nothing: without process groups there is no way to
// find what the agent left behind.
func killGroupRest(*exec.Cmd) {}
