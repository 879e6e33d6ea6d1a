//go:build !unix

package remote

import "os/exec"

// killGroups does nothing here: the manager's Close kills each command's
// job, which is already immediate on Windows.
func killGroups([]int) {}

// newPlanCmd is the command a sandbox plan is made for.
func newPlanCmd() *exec.Cmd { return &exec.Cmd{Path: "true"} }
