package main

import (
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
)

// TestStoredWhere: a stored session on a --remote target is listed with
// its target, in the target grammar; one here with its path.
func TestStoredWhere(t *testing.T) {
	for _, tc := range []struct {
		target, cwd, want string
	}{
		{"", "/work", "/work"},
		{"ssh://me@devbox:2222", "/srv/app", "ssh://me@devbox:2222/srv/app"},
		{"podman://box", "/ws", "podman://box/ws"},
		{"k8s://ctx/ns/pod/c", "/w", "k8s://ctx/ns/pod/c:/w"},
		{"not a target", "/w", "not a target /w"},
	} {
		if got := storedWhere(&sessionstore.Entry{Target: tc.target, Cwd: tc.cwd}); got != tc.want {
			t.Errorf("target %q, cwd %q: %q, want %q", tc.target, tc.cwd, got, tc.want)
		}
	}
}
