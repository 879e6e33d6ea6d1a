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
// WorkspaceWrite policy (what an exec server on a remote target uses): a
// command of one manager makes ~/.cache/pip, absent, a link to the home
// directory; a command of the next manager, with the same options, cannot
// write ~/.bashrc, and Info.Sandbox names the cache left out.
// Not parallel: it sets HOME.
func TestSandboxCacheLinkNextManager(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
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
	link := filepath.Join(home, ".cache", "pip")
	session(`ln -s "$HOME" "$HOME/.cache/pip"`)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the first manager's command did not plant the link: %v", err)
	}
	info := session(`echo 'echo planted' >> "$HOME/.bashrc"`)
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != bashrc {
		t.Errorf("~/.bashrc was written by the next manager's command: %q", b)
	}
	if info.Sandbox == nil || !strings.Contains(strings.Join(info.Sandbox.LeftOut, "\n"), link) {
		t.Errorf("Info.Sandbox %v does not name %s as left out", info.Sandbox, link)
	}
}
