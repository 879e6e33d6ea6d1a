package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// TestRootHint: as root, claude's "Query closed before response received"
// gets the hint, unless acpterm confined it (and set IS_SANDBOX).
func TestRootHint(t *testing.T) {
	msg := "the agent answered session/new with an error: Internal error (code -32603): Query closed before response received"
	d := &driver{}
	got := d.rootHint(msg)
	if os.Geteuid() != 0 {
		if got != "" {
			t.Errorf("not root: hint %q", got)
		}
		return
	}
	if !strings.Contains(got, "IS_SANDBOX=1") || !strings.Contains(got, "--sandbox-agent") {
		t.Errorf("rootHint = %q, want the IS_SANDBOX hint", got)
	}
	if got := d.rootHint("some other error"); got != "" {
		t.Errorf("another error: hint %q", got)
	}
	d.cfg.SandboxAgent = true
	d.agentSandbox = &sandbox.Applied{LandlockABI: 7}
	if got := d.rootHint(msg); got != "" {
		t.Errorf("confined: hint %q", got)
	}
}

// TestMakeNpxDir: the directory is made 0700 with its package.json, and
// anything planted in it (a node_modules) is removed.
func TestMakeNpxDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "npx")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := makeNpxDir(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "package.json" {
		t.Errorf("entries %v, want only package.json", ents)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if err := makeNpxDir(link); err == nil {
		t.Error("makeNpxDir through a symlink: no error")
	}
}

// TestUnder: by name, with symlinks resolved, and not by prefix.
func TestUnder(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want bool
	}{
		{filepath.Join(ws, "a", "b"), true},
		{ws, true},
		{filepath.Join(link, "state", "npx"), true},
		{ws + "2/x", false},
		{base, false},
	}
	for _, tt := range tests {
		if got := under(tt.path, []string{ws}); got != tt.want {
			t.Errorf("under(%s, [%s]) = %v, want %v", tt.path, ws, got, tt.want)
		}
	}
}
