package agentstart

import (
	"os"
	"path/filepath"
	"testing"
)

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
		if got := Under(tt.path, []string{ws}); got != tt.want {
			t.Errorf("Under(%s, [%s]) = %v, want %v", tt.path, ws, got, tt.want)
		}
	}
}
