package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPiCompileCacheLasts: confined, pi's node compile cache is a
// directory of the cache home that lasts from run to run (a fresh TMPDIR
// made every confined run compile pi again), writable, created by
// Prepare, and never the NODE_COMPILE_CACHE of acpterm's environment,
// which unconfined programs read.
func TestPiCompileCacheLasts(t *testing.T) {
	reg, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	home, cache := t.TempDir(), t.TempDir()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": home}, filepath.Join(home, ".cache", "acpterm", "node-compile-cache", "pi-acp")},
		{map[string]string{"HOME": home, "XDG_CACHE_HOME": cache, "NODE_COMPILE_CACHE": "/tmp/node-compile-cache"},
			filepath.Join(cache, "acpterm", "node-compile-cache", "pi-acp")},
	}
	for _, tt := range tests {
		p, ok := reg.ProfileFor([]string{"/opt/bin/pi-acp"})
		if !ok {
			t.Fatal("pi-acp has no profile")
		}
		r, err := p.Resolve(env(tt.env), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"NODE_COMPILE_CACHE=" + tt.want}; !slices.Equal(r.Env, want) {
			t.Errorf("env %v: Env = %q, want %q", tt.env, r.Env, want)
		}
		if !slices.Contains(r.Paths(), tt.want) {
			t.Errorf("env %v: writable %q lack the compile cache %s", tt.env, r.Paths(), tt.want)
		}
		if err := r.Prepare(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(tt.want); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("after Prepare, %s: %v, %v; want a directory 0700", tt.want, fi, err)
		}
	}
	if _, err := profiles["pi-acp"].Resolve(env(map[string]string{"HOME": "relative"}), nil); err == nil {
		t.Error("a relative HOME placed the compile cache")
	}
	if d := profiles["pi-acp"].Describe(); !strings.Contains(d, "NODE_COMPILE_CACHE at $XDG_CACHE_HOME/acpterm/node-compile-cache/pi-acp/ (kept across runs)") {
		t.Errorf("Describe() = %q, lacks the compile cache", d)
	}
	// The agents that do not enable node's compile cache get no
	// variable: their environment is left as it was. (qwen's entry point
	// enables it, as pi's does.)
	for prog, p := range profiles {
		if prog == "pi-acp" || prog == "qwen" {
			continue
		}
		r, err := p.Resolve(env(map[string]string{"HOME": home}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Env) != 0 {
			t.Errorf("%s: Env = %q, want none", prog, r.Env)
		}
	}
}
