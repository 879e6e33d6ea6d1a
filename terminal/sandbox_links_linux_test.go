//go:build linux

package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// TestSandboxCacheLinkNextManager: the default writable set of a
// WorkspaceWrite policy (what an exec server on a remote target uses)
// has caches of the commands' own (sandbox.DefaultCacheDir): a command of
// one manager can neither make ~/.cache/pip, absent, a link to the home
// directory, nor replace its own PIP_CACHE_DIR with one. Where something
// else did the latter, a command of the next manager, with the same
// options, cannot write ~/.bashrc, and Info.Sandbox names the cache left
// out.
// Not parallel: it sets HOME.
func TestSandboxCacheLinkNextManager(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_STATE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
		t.Setenv(v, "")
	}
	if err := os.Mkdir(filepath.Join(home, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	bashrc := "# the user's own\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(bashrc), 0o644); err != nil {
		t.Fatal(err)
	}
	session := func(line string) Info {
		m := newTestManager(t, &Options{DefaultCwd: ws, Policy: &Policy{
			Roots:   []string{ws},
			Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite},
		}})
		info := mustCreate(t, m, Request{Command: line})
		mustWait(t, m, info)
		mustRelease(t, m, info)
		return info
	}
	own := filepath.Join(home, ".local", "state", "acpterm", "sandbox-cache", "pip")
	session(`ln -s "$HOME" "$HOME/.cache/pip"; rm -rf "$PIP_CACHE_DIR"; ln -s "$HOME" "$PIP_CACHE_DIR"`)
	if _, err := os.Lstat(filepath.Join(home, ".cache", "pip")); !os.IsNotExist(err) {
		t.Errorf("the first manager's command made ~/.cache/pip: %v", err)
	}
	if fi, err := os.Lstat(own); err != nil || !fi.IsDir() {
		t.Fatalf("the first manager's command replaced %s: %v, %v", own, fi, err)
	}
	if err := os.RemoveAll(own); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, own); err != nil {
		t.Fatal(err)
	}
	info := session(`echo 'echo planted' >> "$HOME/.bashrc"; echo 'echo planted' >> "$PIP_CACHE_DIR/.bashrc"`)
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != bashrc {
		t.Errorf("~/.bashrc was written by the next manager's command: %q", b)
	}
	if info.Sandbox == nil || !strings.Contains(strings.Join(info.Sandbox.LeftOut, "\n"), own) {
		t.Errorf("Info.Sandbox %v does not name %s as left out", info.Sandbox, own)
	}
}
