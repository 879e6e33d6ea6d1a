//go:build unix

package remote

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own. A Ctrl-C typed
// at the terminal goes to the foreground process group: in the caller's,
// the transport (ssh, podman, kubectl) would die of it at once, and with
// it, by the dead-man rule, every command on the target, before the
// caller could turn the Ctrl-C into session/cancel. When the caller dies
// the transport still ends: its stdin closes.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
