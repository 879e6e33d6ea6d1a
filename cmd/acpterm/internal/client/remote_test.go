package client

import (
	"strings"
	"testing"

	"github.com/acpterm/acpterm/remote"
)

// TestSafeHello: every word of a target's hello is escaped and bounded
// before it is printed: no escape sequence, no line break of the
// target's, no list longer than acpterm shows.
func TestSafeHello(t *testing.T) {
	evil := "\x1b]0;owned\x07\x1b[2J\r\nacpterm: all is well\u202e"
	var many []string
	for range 100 {
		many = append(many, evil)
	}
	h := SafeHello(remote.HelloResponse{Version: evil, OS: evil, Arch: evil, DefaultCwd: "/srv/" + evil, Isolation: evil,
		Roots: many, Sandbox: remote.SandboxInfo{Mode: evil, Network: evil, NamespacesErr: evil, Error: strings.Repeat("x", 10000) + evil, Missing: many}})
	words := []string{h.Version, h.OS, h.Arch, h.DefaultCwd, h.Isolation, h.Sandbox.Mode, h.Sandbox.Network, h.Sandbox.NamespacesErr, h.Sandbox.Error}
	words = append(append(words, h.Roots...), h.Sandbox.Missing...)
	for _, w := range words {
		if strings.ContainsAny(w, "\x1b\x07\r\n\u202e") || len(w) > 2*maxHelloWord {
			t.Errorf("unsafe or unbounded: %q", w)
		}
	}
	if len(h.Sandbox.Missing) != maxHelloList+1 || h.Sandbox.Missing[maxHelloList] != "and 84 more" {
		t.Errorf("missing: %d entries, the last %q", len(h.Sandbox.Missing), h.Sandbox.Missing[len(h.Sandbox.Missing)-1])
	}
	if ok := SafeHello(remote.HelloResponse{OS: "linux", Sandbox: remote.SandboxInfo{Missing: []string{"read-only .git"}}}); ok.OS != "linux" || ok.Sandbox.Missing[0] != "read-only .git" {
		t.Errorf("a plain hello changed: %+v", ok)
	}
}
