package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// liveInGroup lists the live processes of process group pgid.
func liveInGroup(t *testing.T, pgid int) []int {
	t.Helper()
	return proctest.LiveInGroup(pgid)
}

// assertGone waits (bounded) until no live process is left in the
// terminal's process group, which is its pid.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if err := proctest.WaitGroupGone(pid, 5*time.Second); err != nil {
		t.Fatalf("terminal group: %v", err)
	}
}

// assertNoCgroups checks that acpterm process pid, which has exited, left
// none of its cgroups behind (they are named acpterm-PID-…, under the
// cgroup acpterm started in, which is ours).
func assertNoCgroups(t testing.TB, pid int) {
	t.Helper()
	own, err := cgroup.Own()
	if err != nil {
		return // no cgroup v2: acpterm made none either
	}
	left, err := filepath.Glob(filepath.Join(own, fmt.Sprintf("acpterm-%d-*", pid)))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("acpterm (pid %d) left cgroups behind: %v", pid, left)
	}
}
