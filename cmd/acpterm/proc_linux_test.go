package main

import (
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proctest"
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
