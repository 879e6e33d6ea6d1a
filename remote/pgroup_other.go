//go:build !unix

package remote

import "os/exec"

// ownProcessGroup: a Windows console's Ctrl-C reaches every process
// attached to it, which no process group setting changes here.
func ownProcessGroup(*exec.Cmd) {}
