//go:build !unix

package remote

import "os/exec"

// newPlanCmd is the command a sandbox plan is made for.
func newPlanCmd() *exec.Cmd { return &exec.Cmd{Path: "true"} }
