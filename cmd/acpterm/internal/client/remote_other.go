//go:build !unix

package client

import "os/exec"

// ownProcessGroup: a console's Ctrl-C reaches every process attached to
// it on Windows, which has no process groups of this kind.
func ownProcessGroup(cmd *exec.Cmd) {}
