//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// Two sessions through the real binary: in the first, a sandboxed command
// makes a path that the next session would make writable a link to the
// home directory; in the second, with the same configuration, a command
// (or the confined agent) tries to write ~/.bashrc.

func init() {
	registerHostile("write-bashrc", func() int { return serveAgent(&writeBashrcAgent{}) })
}

// writeBashrcAgent appends a line to ~/.bashrc itself and says how that
// went in one message.
type writeBashrcAgent struct{ baseAgent }

func (a *writeBashrcAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	f, err := os.OpenFile(filepath.Join(os.Getenv("HOME"), ".bashrc"), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.WriteString("echo planted by the agent\n")
		f.Close()
	}
	err = a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: fmt.Sprintf("bashrc write: %v", err)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// linkHome is a home directory of the test's own with a ~/.cache and a
// ~/.bashrc, and the environment that points acpterm at it.
func linkHome(t *testing.T) (home, bashrc string, env []string) {
	t.Helper()
	home = t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	bashrc = "# the user's own\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(bashrc), 0o644); err != nil {
		t.Fatal(err)
	}
	env = []string{"HOME=" + home}
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
		env = append(env, v+"=")
	}
	return home, bashrc, env
}

func wantFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s was written: %q", path, b)
	}
}

// TestHostileCacheLinkNextSession: the commands' own caches cannot be
// replaced by a command: it cannot make ~/.cache/go-build (the user's,
// read-only to it) nor CacheDir/go-build a link to the home directory,
// not even when the whole cache directory is writable. Where something
// else made CacheDir/go-build such a link, the next run leaves that
// cache out, says so on its first line and in its JSON, and its command
// cannot write ~/.bashrc through its GOCACHE.
func TestHostileCacheLinkNextSession(t *testing.T) {
	t.Parallel()
	home, bashrc, env := linkHome(t)
	ws := t.TempDir()
	cacheDir := filepath.Join(home, ".local", "state", "acpterm", "sandbox-cache")
	link := filepath.Join(cacheDir, "go-build")
	o := opts{env: env, dir: ws}
	r := acpterm(t, o, "run", "--approve-all", "-p", `ln -s "$HOME" "$HOME/.cache/go-build"; rm -rf "$GOCACHE"; ln -s "$HOME" "$GOCACHE"; true`, "--", acptermBin, "agent")
	if _, err := os.Lstat(filepath.Join(home, ".cache", "go-build")); r.code != 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("session 1 (exit %d) made ~/.cache/go-build (%v)\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.IsDir() {
		t.Fatalf("session 1 replaced %s: %v, %v", link, fi, err)
	}

	// Not even a run given the whole cache directory (--writable) can:
	// each cache is a mount point while a sandbox runs.
	r = acpterm(t, o, "run", "--approve-all", "--writable", cacheDir, "-p", `rm -rf "$GOCACHE"; ln -s "$HOME" "$GOCACHE"; true`, "--", acptermBin, "agent")
	if fi, err := os.Lstat(link); r.code != 0 || err != nil || !fi.IsDir() {
		t.Fatalf("session 2, with --writable %s (exit %d), replaced %s: %v, %v", cacheDir, r.code, link, fi, err)
	}
	// Something unconfined does (an older acpterm let commands write
	// ~/.local/state with the workspace in the home directory).
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}

	r = acpterm(t, o, "run", "--format", "json", "--approve-all", "-p", `echo 'echo planted' >> "$HOME/.bashrc"; echo 'echo planted' >> "$GOCACHE/../.bashrc"; echo 'echo planted' >> "$GOCACHE/.bashrc"`, "--", acptermBin, "agent", "--keep-going")
	wantFile(t, filepath.Join(home, ".bashrc"), bashrc)
	first, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.HasPrefix(first, "acpterm: sandbox:") || !strings.Contains(first, "left out") || !strings.Contains(first, link) {
		t.Errorf("session 3's first line does not name the cache left out: %q", first)
	}
	created := ofKind(parseEvents(t, r.stdout), "terminal_created")
	if len(created) != 1 {
		t.Fatalf("%d terminal_created events:\n%s", len(created), r.stdout)
	}
	sb, _ := created[0]["sandbox"].(map[string]any)
	if left := fmt.Sprint(sb["leftOut"]); !strings.Contains(left, link) {
		t.Errorf("terminal_created's sandbox %v does not name %s in leftOut", sb, link)
	}
}

// TestHostileProfileLinkNextSession: a command (of a run given --writable
// ~/.cache) makes ~/.cache/opencode,
// one of the confined opencode's writable directories, a link to the
// home directory; the next confined run of opencode refuses to start,
// naming the link, and nothing writes ~/.bashrc.
func TestHostileProfileLinkNextSession(t *testing.T) {
	t.Parallel()
	home, bashrc, env := linkHome(t)
	ws, bin := t.TempDir(), t.TempDir()
	// Named opencode, the test binary gets opencode's profile.
	if err := os.Symlink(testExe(t), filepath.Join(bin, "opencode")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".cache", "opencode")
	o := opts{env: env, dir: ws}
	// Only a run the user let write ~/.cache can: commands have caches
	// of their own.
	r := acpterm(t, o, "run", "--approve-all", "--writable", filepath.Join(home, ".cache"), "-p", `ln -s "$HOME" "$HOME/.cache/opencode"`, "--", acptermBin, "agent")
	if fi, err := os.Lstat(link); r.code != 0 || err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("session 1 did not plant the link (exit %d, %v)\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}

	o.env = append(env, fakeAgentEnv+"=write-bashrc")
	r = acpterm(t, o, "run", "--approve-all", "--sandbox-agent", "-p", "go", "--", filepath.Join(bin, "opencode"))
	wantFile(t, filepath.Join(home, ".bashrc"), bashrc)
	if r.code == 0 || !strings.Contains(r.stderr, link) || !strings.Contains(r.stderr, "symlink") {
		t.Errorf("session 2: exit %d, want a refusal naming %s\nstdout:\n%s\nstderr:\n%s", r.code, link, r.stdout, r.stderr)
	}
}

// TestHostileGitSearchNextSession: a command makes 20,050 empty
// directories that sort before a nested repository (more than the search
// for repositories used to read); in the next run, that repository's
// .git/config is still read-only for commands.
func TestHostileGitSearchNextSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	t.Parallel()
	ws := t.TempDir()
	config := filepath.Join(ws, "zz-vendor", ".git", "config")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts{dir: ws}
	r := acpterm(t, o, "run", "--approve-all", "-p", `seq -f d%05g 0 20049 | xargs mkdir`, "--", acptermBin, "agent")
	if ents, err := os.ReadDir(ws); r.code != 0 || err != nil || len(ents) != 20051 {
		t.Fatalf("session 1 made %d entries (exit %d, %v)\n%s", len(ents), r.code, err, r.stderr)
	}
	r = acpterm(t, o, "run", "--approve-all", "-p", `echo '	fsmonitor = echo planted' >> zz-vendor/.git/config`, "--", acptermBin, "agent", "--keep-going")
	wantFile(t, config, "[core]\n")
	if !strings.Contains(r.stdout+r.stderr, "Read-only file system") {
		t.Errorf("session 2's write was not refused as read-only:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestHostileWritableLinkNextSession: a command (of a run given --writable
// ~/.cache) makes ~/.cache/proj a
// link to the home directory; a next run given --writable ~/.cache/proj
// refuses to start, naming the link, rather than make the home
// directory writable.
func TestHostileWritableLinkNextSession(t *testing.T) {
	t.Parallel()
	home, bashrc, env := linkHome(t)
	ws := t.TempDir()
	link := filepath.Join(home, ".cache", "proj")
	o := opts{env: env, dir: ws}
	r := acpterm(t, o, "run", "--approve-all", "--writable", filepath.Join(home, ".cache"), "-p", `ln -s "$HOME" "$HOME/.cache/proj"`, "--", acptermBin, "agent")
	if fi, err := os.Lstat(link); r.code != 0 || err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("session 1 did not plant the link (exit %d, %v)\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	r = acpterm(t, o, "run", "--approve-all", "--writable", link, "-p", `echo 'echo planted' >> "$HOME/.bashrc"`, "--", acptermBin, "agent")
	wantFile(t, filepath.Join(home, ".bashrc"), bashrc)
	if r.code == 0 || !strings.Contains(r.stderr, link) || !strings.Contains(r.stderr, "symlink") {
		t.Errorf("session 2: exit %d, want a refusal naming %s\nstdout:\n%s\nstderr:\n%s", r.code, link, r.stdout, r.stderr)
	}
}
