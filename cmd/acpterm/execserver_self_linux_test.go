package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecServerRefusesItsOwnWritable: an exec server whose executable
// lies where its commands may write (its --cwd, a --writable) refuses to
// start, naming both: a command could replace the program that the next
// connection runs unconfined. Elsewhere it serves (here, an empty stdin:
// it ends at once, with status 0).
func TestExecServerRefusesItsOwnWritable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(plainAcpterm(t))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	bin := filepath.Join(ws, "tools", "acpterm")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "acpterm")
	if err := os.Symlink(bin, linked); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, tc := range []struct {
		name string
		exe  string
		args []string
		in   string // the directory named as writable; "" when it serves
	}{
		{"in its cwd", bin, []string{"--cwd", ws}, ws},
		{"through a symlink", linked, []string{"--cwd", ws}, ws},
		{"in a --writable", bin, []string{"--cwd", elsewhere, "--writable", filepath.Dir(bin)}, filepath.Dir(bin)},
		{"read-only", bin, []string{"--cwd", ws, "--sandbox", "read-only"}, ""},
		{"elsewhere", bin, []string{"--cwd", elsewhere}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, tc.exe, opts{}, append([]string{"exec-server"}, tc.args...)...)
			if tc.in == "" {
				if r.code != 0 {
					t.Errorf("exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
				}
				return
			}
			if r.code == 0 || !strings.Contains(r.stderr, "this acpterm ("+bin+") lies in "+tc.in+", which the commands may write") {
				t.Errorf("exit %d, want a refusal naming %s and %s\nstderr:\n%s", r.code, bin, tc.in, r.stderr)
			}
		})
	}
}
