//go:build unix

package client

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the transport in a process group of its own, as
// the agent is: a Ctrl-C typed at the terminal reaches acpterm alone,
// which turns the first into session/cancel, and would otherwise kill ssh,
// and with it every command on the target, at once. When acpterm dies the
// transport still ends: its stdin closes.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
