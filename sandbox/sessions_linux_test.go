package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests plant something with a sandboxed command (the first
// session), then set up a new sandbox with the same configuration (the
// next session) and check that what was planted does not widen it.

// testHome gives the test a home directory of its own, with a cache
// directory and a .bashrc, and the caches' variables at their defaults
// below it. It returns the home and the .bashrc's content.
func testHome(t *testing.T) (home, bashrc string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
		t.Setenv(v, "")
	}
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	bashrc = "# the user's own\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(bashrc), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, bashrc
}

// wantUnchanged fails the test if the file at path no longer holds want.
func wantUnchanged(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s was written by a sandboxed command: %q", path, b)
	}
}

// TestCacheLinkAcrossSessions: a command makes a cache that does not
// exist yet a link to the home directory; the next sandbox, with the same
// DefaultWritable list, does not make the home directory writable. (An
// existing cache cannot be replaced from inside: it is a mount point
// there.)
func TestCacheLinkAcrossSessions(t *testing.T) {
	need(t, true)
	for _, cache := range []string{"go-build", "pip"} {
		t.Run(cache, func(t *testing.T) {
			home, bashrc := testHome(t)
			ws := t.TempDir()
			session := func(script string) (string, int) {
				p := &Policy{Mode: WorkspaceWrite, Writable: DefaultWritable(ws)}
				return box{}.sh(t, p, ws, script, home)
			}
			if out, code := session(`ln -s "$1" "$1/.cache/` + cache + `"`); code != 0 {
				t.Fatalf("session 1 could not plant the link: status %d\n%s", code, out)
			}
			out, _ := session(`echo 'echo planted' >> "$1/.bashrc"`)
			wantUnchanged(t, filepath.Join(home, ".bashrc"), bashrc)
			if !strings.Contains(out, "ermission denied") && !strings.Contains(out, "ead-only") {
				t.Errorf("session 2's write was not refused: %q", out)
			}
		})
	}
}

// TestWritableSwappedAfterWrap: a writable directory replaced by a link
// between Wrap and Start (a command of the same session can do it) makes
// the start fail, rather than make the link's target writable; with and
// without a mount namespace.
func TestWritableSwappedAfterWrap(t *testing.T) {
	need(t, true)
	for _, mounts := range []bool{true, false} {
		name := "mounts"
		if !mounts {
			name = "landlock-alone"
		}
		t.Run(name, func(t *testing.T) {
			if !mounts {
				saved := namespaceProbe
				namespaceProbe = func() error { return errors.New("user namespaces are disabled") }
				t.Cleanup(func() { namespaceProbe = saved })
			}
			home, bashrc := testHome(t)
			pip := filepath.Join(home, ".cache", "pip")
			if err := os.Mkdir(pip, 0o755); err != nil {
				t.Fatal(err)
			}
			p := &Policy{Mode: WorkspaceWrite, Writable: []string{pip}, WithoutMountNamespace: true}
			cmd := exec.Command("/bin/sh", "-c", `echo 'echo planted' >> "$1/.bashrc"`, "sh", home)
			wrap(t, p, cmd)
			if err := os.Rename(pip, pip+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(home, pip); err != nil {
				t.Fatal(err)
			}
			out, _ := cmd.CombinedOutput()
			wantUnchanged(t, filepath.Join(home, ".bashrc"), bashrc)
			if code := cmd.ProcessState.ExitCode(); code != ExitSetupFailed {
				t.Errorf("status %d, want %d (the setup refused)\n%s", code, ExitSetupFailed, out)
			}
		})
	}
}

// TestGitSearchAcrossSessions: a command makes more empty directories
// than the search for repositories used to read, all sorting before a
// nested repository; the next sandbox still keeps that repository's .git
// read-only.
func TestGitSearchAcrossSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	need(t, true)
	ws := t.TempDir()
	nested := filepath.Join(ws, "zz-vendor", ".git")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	config := "[core]\n"
	if err := os.WriteFile(filepath.Join(nested, "config"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := func() *Policy { return &Policy{Mode: WorkspaceWrite, Writable: []string{ws}} }
	out, code := box{}.sh(t, policy(), ws, `seq -f d%05g 0 20049 | xargs mkdir`)
	if code != 0 {
		t.Fatalf("session 1 could not make the directories: status %d\n%s", code, out)
	}
	if ents, err := os.ReadDir(ws); err != nil || len(ents) != 20051 {
		t.Fatalf("session 1 made %d entries (%v), want 20051", len(ents), err)
	}
	got := box{}.act(t, policy(), ws, "write", filepath.Join(nested, "config"))
	wantUnchanged(t, filepath.Join(nested, "config"), config)
	if got != "EROFS" {
		t.Errorf("session 2's write to the nested .git/config: %s, want EROFS", got)
	}
}

// TestGitSwappedAfterWrap: a .git replaced by a link between Wrap and
// Start (to a directory the command may write, where git would find its
// config and hooks) makes the start fail, rather than leave the
// directory the link names writable.
func TestGitSwappedAfterWrap(t *testing.T) {
	need(t, true)
	root, _ := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}}
	cmd := exec.Command("/bin/sh", "-c", `echo '[core] fsmonitor = echo planted' > .git/config`)
	cmd.Dir = root
	wrap(t, p, cmd)
	if err := os.Rename(filepath.Join(root, ".git"), filepath.Join(root, "old-git")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other", filepath.Join(root, ".git")); err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	mustNotExist(t, filepath.Join(root, "other", "config"))
	if code := cmd.ProcessState.ExitCode(); code != ExitSetupFailed {
		t.Errorf("status %d, want %d (the setup refused)\n%s", code, ExitSetupFailed, out)
	}
}
