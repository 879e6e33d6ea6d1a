//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userCacheEntries are files in the caches a user's own builds trust,
// where the user's go, npm and XDG tools (with no variable set) keep
// them: what a hostile command would poison.
var userCacheEntries = []string{".cache/go-build/entry", "go/pkg/mod/entry", ".npm/entry", ".cache/x/entry"}

// TestOwnCachesAcrossSessions: a sandboxed command cannot write the
// user's caches, but has its own, named by the tools' variables, which
// keep what it wrote for the next session's sandboxed command; an
// unconfined session afterwards finds the user's caches as they were.
func TestOwnCachesAcrossSessions(t *testing.T) {
	t.Parallel()
	home, _, env := linkHome(t)
	for _, e := range userCacheEntries {
		p := filepath.Join(home, e)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the user's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cacheDir := filepath.Join(home, ".local", "state", "acpterm", "sandbox-cache")
	_, goErr := exec.LookPath("go")
	ws := t.TempDir()
	o := opts{env: env, dir: ws}

	// The built-in agent runs each line of the prompt as a command: the
	// scripts are one line each.

	// Session 1, sandboxed: poisoning the user's caches (the entries,
	// and new files beside them) fails; writing its own works.
	script := `{ for f in` + userCachePaths(home) + ` "$HOME/.cache/go-build/new" "$HOME/.npm/new" "$HOME/.cache/x/new"; do { echo poisoned > "$f"; } 2>/dev/null && printf '%s %s\n' wrote "$f"; done; echo session1 > "$GOCACHE/marker" && echo "own GOCACHE=$GOCACHE"; echo session1 > "$XDG_CACHE_HOME/marker" && echo "own XDG_CACHE_HOME=$XDG_CACHE_HOME"; if command -v go >/dev/null; then echo "go env GOCACHE=$(go env GOCACHE)"; fi; } > s1.txt 2>&1`
	r := acpterm(t, o, "run", "--approve-all", "-p", script, "--", acptermBin, "agent")
	s1 := readWS(t, ws, "s1.txt")
	if r.code != 0 || strings.Contains(s1, "wrote") {
		t.Errorf("session 1: exit %d, output:\n%s\nstderr:\n%s", r.code, s1, r.stderr)
	}
	for _, want := range []string{
		"own GOCACHE=" + filepath.Join(cacheDir, "go-build") + "\n",
		"own XDG_CACHE_HOME=" + filepath.Join(cacheDir, "xdg") + "\n",
	} {
		if !strings.Contains(s1, want) {
			t.Errorf("session 1's output does not say %q:\n%s", want, s1)
		}
	}
	if goErr == nil && !strings.Contains(s1, "go env GOCACHE="+filepath.Join(cacheDir, "go-build")+"\n") {
		t.Errorf("go env GOCACHE, sandboxed, is not the sandbox's own:\n%s", s1)
	}
	userCachesIntact(t, home)

	// Session 2, sandboxed: what session 1 left in its caches is there.
	r = acpterm(t, o, "run", "--approve-all", "-p", `{ cat "$GOCACHE/marker" "$XDG_CACHE_HOME/marker"; } > s2.txt 2>&1`, "--", acptermBin, "agent")
	if s2 := readWS(t, ws, "s2.txt"); r.code != 0 || s2 != "session1\nsession1\n" {
		t.Errorf("session 2: exit %d, read %q from its own caches, want session 1's markers twice", r.code, s2)
	}

	// Session 3, unconfined: the user's caches hold only the user's.
	script = `{ cat` + userCachePaths(home) + `; ls -A "$HOME/.cache/go-build" "$HOME/.npm" "$HOME/.cache/x"; if command -v go >/dev/null; then echo "go env GOCACHE=$(go env GOCACHE)"; fi; } > s3.txt 2>&1`
	r = acpterm(t, o, "run", "--sandbox", "off", "--approve-all", "-p", script, "--", acptermBin, "agent")
	want := strings.Repeat("the user's\n", len(userCacheEntries)) +
		home + "/.cache/go-build:\nentry\n\n" + home + "/.cache/x:\nentry\n\n" + home + "/.npm:\nentry\n" // ls sorts them
	if goErr == nil {
		want += "go env GOCACHE=" + filepath.Join(home, ".cache", "go-build") + "\n"
	}
	if s3 := readWS(t, ws, "s3.txt"); r.code != 0 || s3 != want {
		t.Errorf("session 3, unconfined: exit %d, found\n%s\nwant\n%s", r.code, s3, want)
	}

	// Session 4, sandboxed, given the user's Go build cache knowingly:
	// GOCACHE names that one, and its commands may write it.
	userGo := filepath.Join(home, ".cache", "go-build")
	script = `{ echo session4 > "${GOCACHE:-$HOME/.cache/go-build}/optin" && echo "GOCACHE=$GOCACHE"; if command -v go >/dev/null; then echo "go env GOCACHE=$(go env GOCACHE)"; fi; } > s4.txt 2>&1`
	r = acpterm(t, o, "run", "--approve-all", "--writable", userGo, "-p", script, "--", acptermBin, "agent")
	want = "GOCACHE=" + userGo + "\n"
	if goErr == nil {
		want += "go env GOCACHE=" + userGo + "\n"
	}
	if s4 := readWS(t, ws, "s4.txt"); r.code != 0 || s4 != want {
		t.Errorf("session 4, --writable %s: exit %d, said\n%s\nwant\n%s", userGo, r.code, s4, want)
	}
	wantFile(t, filepath.Join(userGo, "optin"), "session4\n")
}

// userCachePaths is userCacheEntries as shell words.
func userCachePaths(home string) string {
	var b strings.Builder
	for _, e := range userCacheEntries {
		b.WriteString(" '" + filepath.Join(home, e) + "'")
	}
	return b.String()
}

func userCachesIntact(t *testing.T, home string) {
	t.Helper()
	for _, e := range userCacheEntries {
		wantFile(t, filepath.Join(home, e), "the user's\n")
	}
	for _, d := range []string{".cache/go-build", ".npm", ".cache/x"} {
		ents, err := os.ReadDir(filepath.Join(home, d))
		if err != nil || len(ents) != 1 {
			t.Errorf("~/%s holds %v (%v), want only the user's entry", d, ents, err)
		}
	}
}

func readWS(t *testing.T, ws, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return string(b)
}
