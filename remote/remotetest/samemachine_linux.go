package remotetest

import (
	"strconv"
	"testing"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// SameMachine is a target whose processes are this machine's: sshd on
// 127.0.0.1, a rootful podman container, k8stest's node. This machine's
// /proc shows them at once, in any PID namespace, so Marked reads it; PS
// has nothing to add (embed SameMachine and define PS for a container,
// whose own ps sees it from inside).
type SameMachine struct{}

// Marked lists the PIDs of this machine's live processes that hold the
// marker.
func (SameMachine) Marked(_ testing.TB, marker string) []string {
	var s []string
	for _, p := range sshtest.Running(MarkerVar, marker) {
		s = append(s, strconv.Itoa(p))
	}
	return s
}

// PS returns nil: Marked has seen everything there is to see.
func (SameMachine) PS(testing.TB, ...string) []string { return nil }
