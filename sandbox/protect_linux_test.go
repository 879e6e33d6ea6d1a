package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// session runs script under p as one sandbox does from start to end: a
// Wrap or a spawner, released (Applied.Cleanup, Spawner.Close) before it
// returns, as at the end of a run.
func (b box) session(t *testing.T, p *Policy, dir, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if !b.spawner {
		a, err := p.Wrap(cmd)
		if err != nil {
			t.Fatalf("Wrap: %v", err)
		}
		out, _ := cmd.CombinedOutput()
		if err := a.Cleanup(); err != nil {
			t.Error(err)
		}
		return string(out)
	}
	s, err := p.NewSpawner()
	if err != nil {
		t.Fatalf("NewSpawner: %v", err)
	}
	defer s.Close()
	c, out := spawn(t, s, &Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: dir})
	text := <-out
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Error(err)
	}
	return text
}

// protectedSetup is a workspace inside a repository of its own (with no
// .git of its own), holding some protected files, and an agent's state
// directory in a temporary home; the policy an agent's run would get.
func protectedSetup(t *testing.T) (ws, home string, p *Policy) {
	t.Helper()
	outer := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	ws = filepath.Join(outer, "ws")
	home = t.TempDir()
	files := map[string]string{
		filepath.Join(ws, ".claude/settings.json"):   "{}",
		filepath.Join(ws, ".vscode/tasks.json"):      "{}",
		filepath.Join(ws, "sub/.mcp.json"):           "{}",
		filepath.Join(ws, "a/b/c/.MCP.json"):         "{}", // depth 3, another case
		filepath.Join(ws, "src/main.go"):             "package main",
		filepath.Join(ws, ".bashrc"):                 "{}", // the user\'s, in a workspace that is not the home directory
		filepath.Join(home, ".claude/settings.json"): "{}",
		filepath.Join(home, ".claude.json"):          "{}",
	}
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(home, ".claude")
	p = &Policy{
		Mode:      WorkspaceWrite,
		Writable:  []string{ws, state, filepath.Join(home, ".claude.json")},
		Protected: append(DefaultProtected(ws), filepath.Join(state, "settings.json"), filepath.Join(state, "commands"), filepath.Join(state, "hooks")),
	}
	return ws, home, p
}

// plantScript tries to write, in the workspace and in the agent's state
// directory, each kind of file that a later, unconfined program runs
// things from, existing and not, and then the files an agent must keep
// writing. It prints what it managed.
const plantScript = `
try() { if ( eval "$1" ) 2>/dev/null; then echo "planted: $1"; fi; }
hook='{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch $MARKER"}]}]}}'
try 'printf %s "$hook" > .claude/settings.json'
try 'printf %s "$hook" > .claude/settings.local.json'
try 'mkdir -p .claude/commands && echo x > .claude/commands/evil.md'
try 'mv .claude .claude-old && mkdir .claude && printf %s "$hook" > .claude/settings.json'
try 'echo "{\"mcpServers\":{}}" > .mcp.json'
try 'mkdir -p .gemini && echo {} > .gemini/settings.json'
try 'mkdir -p .codex && echo "notify=[\"touch\"]" > .codex/config.toml'
try 'rmdir .codex'
try 'echo {} > .vscode/tasks.json'
try 'mv .vscode .vscode-old'
try 'echo "touch $MARKER" > .bashrc'
try 'echo x > .gitmodules'
try 'echo {} > opencode.json'
try 'echo {} > sub/.mcp.json'
try 'echo {} > a/b/c/.MCP.json'
try 'git init -q . && git config core.fsmonitor "touch $MARKER #"'
try 'mkdir -p .git/hooks'
try 'printf %s "$hook" > "$AGENT/settings.json"'
try 'mkdir -p "$AGENT/commands" && echo x > "$AGENT/commands/evil.md"'
try 'mkdir -p "$AGENT/hooks" && echo x > "$AGENT/hooks/start.sh"'
echo notes > notes.txt && echo "wrote notes"
echo '{"type":"user"}' > "$AGENT/session.jsonl" && echo "wrote session"
echo '{"numStartups":1}' > "$AGENT.json" && echo "wrote state"
`

// TestProtectedAcrossSessions: a sandboxed command of one session tries to
// plant what a later unconfined program would run (an agent's hooks and
// MCP servers, an editor's tasks, a shell's rc file, a repository of its
// own with core.fsmonitor where the workspace has no .git); after it, none
// of it is there, the user's git status in the workspace runs nothing, no
// placeholder is left, and the command still wrote its ordinary files.
func TestProtectedAcrossSessions(t *testing.T) {
	t.Parallel()
	both(t, testProtectedAcrossSessions)
}

func testProtectedAcrossSessions(t *testing.T, b box) {
	need(t, true)
	ws, home, p := protectedSetup(t)
	marker := filepath.Join(t.TempDir(), "marker")
	agent := filepath.Join(home, ".claude")
	before := listTree(t, ws)

	out := b.session(t, p, ws, plantScript, "MARKER="+marker, "AGENT="+agent)
	t.Logf("session 1:\n%s", out)
	if strings.Contains(out, "planted") {
		t.Errorf("the sandboxed command planted files:\n%s", out)
	}
	for _, w := range []string{"wrote notes", "wrote session", "wrote state"} {
		if !strings.Contains(out, w) {
			t.Errorf("the command could not do what an agent must (%q missing):\n%s", w, out)
		}
	}

	// Session 2, outside the sandbox: what the user's programs find.
	for _, f := range []string{".claude/settings.json", ".vscode/tasks.json", "sub/.mcp.json", "a/b/c/.MCP.json", ".bashrc"} {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(b) != "{}" {
			t.Errorf("%s: %q, %v; want it unchanged", f, b, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(agent, "settings.json")); err != nil || string(b) != "{}" {
		t.Errorf("the agent's settings.json: %q, %v; want it unchanged", b, err)
	}
	for _, f := range []string{".mcp.json", ".gemini", ".codex", ".gitmodules", "opencode.json", ".git", ".claude-old", ".vscode-old", ".claude/commands", ".claude/settings.local.json"} {
		mustNotExist(t, filepath.Join(ws, f))
	}
	mustNotExist(t, filepath.Join(agent, "commands"))
	mustNotExist(t, filepath.Join(agent, "hooks"))
	after := listTree(t, ws)
	if extra := without(after, before); !slices.Equal(extra, []string{"notes.txt"}) {
		t.Errorf("the workspace gained %q, want only notes.txt (no placeholder left)", extra)
	}
	git := exec.Command("git", "status", "--short")
	git.Dir = ws
	if out, err := git.CombinedOutput(); err != nil {
		t.Errorf("git status: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("git status in the workspace ran a planted core.fsmonitor")
	}
}

// TestProtectedShared: a placeholder that two sandboxes use stays until
// the last of them is done, and one left by a killed run is taken over
// and removed by the next.
func TestProtectedShared(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{filepath.Join(ws, ".mcp.json"), filepath.Join(ws, ".vscode")}}
	// What a kill -9 leaves: a marked, empty directory.
	left := filepath.Join(ws, ".vscode")
	if err := os.Mkdir(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(left, placeholderAttr, []byte("1"), 0); err != nil {
		t.Skipf("no user extended attributes here: %v", err)
	}
	s := newSpawner(t, p)
	// Another sandbox, wrapped, comes and goes while the spawner is up.
	if out := (box{}).session(t, p, ws, "true"); out != "" {
		t.Fatalf("session: %s", out)
	}
	c, out := spawn(t, s, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "echo {} > .mcp.json && echo planted; mkdir .vscode/x && echo planted; true"}, Dir: ws})
	if text := <-out; strings.Contains(text, "planted") {
		t.Errorf("after another sandbox ended, the spawner's command planted: %s", text)
	}
	c.Wait()
	c.Release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, filepath.Join(ws, ".mcp.json"))
	mustNotExist(t, left)
}

// TestProtectedOtherProcess: a placeholder another process's sandbox
// holds (a shared flock on its own open of it, as that process's
// reservation has; for .mcp.json, a file holding {"mcpServers":{}}) is left in place when this one ends, and
// removed by the next sandbox once that one let go.
func TestProtectedOtherProcess(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	mcp := filepath.Join(ws, ".mcp.json")
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{mcp}}
	a := wrap(t, p, exec.Command("/bin/true"))
	other, err := unix.Open(mcp, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("no placeholder at %s: %v", mcp, err)
	}
	if err := unix.Flock(other, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mcp); err != nil || string(b) != "{\"mcpServers\":{}}\n" {
		t.Fatalf("the placeholder another sandbox holds was removed or changed: %q, %v", b, err)
	}
	if out := (box{}).session(t, p, ws, "echo {} > .mcp.json && echo planted"); strings.Contains(out, "planted") {
		t.Errorf("while another sandbox holds the placeholder, a command planted .mcp.json")
	}
	if b, err := os.ReadFile(mcp); err != nil || string(b) != "{\"mcpServers\":{}}\n" {
		t.Fatalf("the placeholder another sandbox holds was removed or changed: %q, %v", b, err)
	}
	unix.Close(other)
	(box{}).session(t, p, ws, "true")
	mustNotExist(t, mcp)
}

// TestProtectedSymlink: a protected name that is a symlink cannot be
// covered by a mount; it is named, not skipped in silence.
func TestProtectedSymlink(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	if err := os.Symlink("elsewhere", filepath.Join(ws, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	a := wrap(t, &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{filepath.Join(ws, ".mcp.json")}}, exec.Command("/bin/true"))
	if !slices.ContainsFunc(a.Missing, func(m string) bool { return strings.Contains(m, ".mcp.json") && strings.Contains(m, "symlink") }) {
		t.Errorf("Missing = %q, want the symlinked .mcp.json named", a.Missing)
	}
}

// TestDefaultProtected: the names at the root whether they exist or not,
// and below it those that exist, in any case, to depth 3.
func TestDefaultProtected(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/.VSCode", "a/b/c/.claude", "a/b/c/d/.claude", "node_modules/x/.vscode", ".git/x/.vscode"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", t.TempDir())
	got := DefaultProtected(root)
	if slices.Contains(got, filepath.Join(root, ".bashrc")) {
		t.Errorf("DefaultProtected reserves .bashrc in a root that is not the home directory")
	}
	t.Setenv("HOME", root)
	if !slices.Contains(DefaultProtected(root), filepath.Join(root, ".bashrc")) {
		t.Errorf("DefaultProtected lacks .bashrc in the home directory")
	}
	for _, want := range []string{".mcp.json", ".vscode", ".claude", ".git", "a/.VSCode", "a/b/c/.claude"} {
		if !slices.Contains(got, filepath.Join(root, want)) {
			t.Errorf("DefaultProtected lacks %s", want)
		}
	}
	for _, not := range []string{"a/b/c/d/.claude", "node_modules/x/.vscode", ".git/x/.vscode"} {
		if slices.Contains(got, filepath.Join(root, not)) {
			t.Errorf("DefaultProtected has %s", not)
		}
	}
}

// listTree lists the paths under root, relative, sorted.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// without is what a has that b does not.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestProtectedFilePlaceholder: a missing protected name that programs
// open as a file is reserved with a file, which for JSON reads as an empty
// object (opencode will not start with a directory where its opencode.json
// would be; qwen warns of an empty .mcp.json) and cannot be written; one of
// a directory with an empty directory. A placeholder file that someone
// filled is left when the sandbox ends.
// Neither is left afterwards.
func TestProtectedFilePlaceholder(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{filepath.Join(ws, "opencode.json"), filepath.Join(ws, ".vscode")}}
	out := (box{}).session(t, p, ws, `test -f opencode.json && test "$(cat opencode.json)" = "{}" && echo read-ok
echo '{"mcp":{}}' > opencode.json && echo planted
test -d .vscode && echo dir-ok`)
	for _, want := range []string{"read-ok", "dir-ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("the command's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "planted") {
		t.Errorf("a command wrote the placeholder of opencode.json:\n%s", out)
	}
	mustNotExist(t, filepath.Join(ws, "opencode.json"))
	mustNotExist(t, filepath.Join(ws, ".vscode"))
}

// TestPlaceholderMark: a placeholder carries its mark from the moment it
// exists (the sticky bit, set by the mkdir or open that makes it), so a
// kill -9 leaves only marked ones: the next sandbox takes one of those
// over and removes it, and leaves the user's own empty directory of a
// protected name, which has no mark.
func TestPlaceholderMark(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	vscode, mcp, idea, zed := filepath.Join(ws, ".vscode"), filepath.Join(ws, ".mcp.json"), filepath.Join(ws, ".idea"), filepath.Join(ws, ".zed")
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{vscode, mcp, idea, zed}}
	// What a kill -9 leaves (a marked directory), and the user's own.
	if err := unix.Mkdir(idea, 0o755|unix.S_ISVTX); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(zed, 0o755); err != nil {
		t.Fatal(err)
	}
	a := wrap(t, p, exec.Command("/bin/true"))
	for _, path := range []string{vscode, mcp, idea} {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatalf("no placeholder at %s: %v", path, err)
		}
		if st.Mode&unix.S_ISVTX == 0 {
			t.Errorf("the placeholder %s is unmarked: mode %o", path, st.Mode)
		}
	}
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, vscode)
	mustNotExist(t, mcp)
	mustNotExist(t, idea)
	if fi, err := os.Lstat(zed); err != nil || !fi.IsDir() {
		t.Errorf("the user's own empty %s was removed: %v", zed, err)
	}
}

// TestPlaceholderFileFilled: a placeholder file that was filled outside the
// sandbox while it ran (the user saved a real .mcp.json there) is the
// user's, and stays when the sandbox ends; one holding only its own
// content goes.
func TestPlaceholderFileFilled(t *testing.T) {
	need(t, true)
	ws := t.TempDir()
	mcp, oc := filepath.Join(ws, ".mcp.json"), filepath.Join(ws, "opencode.json")
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Protected: []string{mcp, oc}}
	a := wrap(t, p, exec.Command("/bin/true"))
	if err := os.Chmod(mcp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mcp, []byte(`{"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mcp); err != nil || string(b) != `{"x":1}` {
		t.Errorf("the user's .mcp.json was removed or changed: %q, %v", b, err)
	}
	mustNotExist(t, oc)

	// A placeholder holding what an earlier release's held ({} in an
	// .mcp.json, left by a run that was killed) goes as well.
	ws2 := t.TempDir()
	mcp2 := filepath.Join(ws2, ".mcp.json")
	a = wrap(t, &Policy{Mode: WorkspaceWrite, Writable: []string{ws2}, Protected: []string{mcp2}}, exec.Command("/bin/true"))
	if b, err := os.ReadFile(mcp2); err != nil || string(b) != "{\"mcpServers\":{}}\n" {
		t.Errorf(".mcp.json's placeholder holds %q, %v; want an empty server list", b, err)
	}
	if err := os.WriteFile(mcp2, []byte("{}\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, mcp2)
}

// TestProtectedNpmrcAcrossSessions: in a workspace that is the home
// directory, a command of one session cannot write ~/.npmrc (whose
// registry npx fetches agents from and acpterm lets an npx agent reach,
// and whose node-options the user's next npm runs), missing or not; the
// next session finds it as it was.
func TestProtectedNpmrcAcrossSessions(t *testing.T) {
	need(t, true)
	home := t.TempDir()
	t.Setenv("HOME", home)
	npmrc := filepath.Join(home, ".npmrc")
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{home}, Protected: DefaultProtected(home)}
	plant := `echo 'registry=http://planted.example/' >> .npmrc && echo planted`
	if out := (box{}).session(t, p, home, plant); strings.Contains(out, "planted") {
		t.Errorf("session 1 created ~/.npmrc:\n%s", out)
	}
	mustNotExist(t, npmrc)
	if err := os.WriteFile(npmrc, []byte("fund=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Protected = DefaultProtected(home)
	if out := (box{}).session(t, p, home, plant); strings.Contains(out, "planted") {
		t.Errorf("session 2 appended to ~/.npmrc:\n%s", out)
	}
	if b, err := os.ReadFile(npmrc); err != nil || string(b) != "fund=false\n" {
		t.Errorf("~/.npmrc after the sessions: %q, %v", b, err)
	}
	// With a token line, hidden from the command (Redacted) as well.
	const withToken = "//registry.npmjs.org/:_authToken=npm_secret\nfund=false\n"
	if err := os.WriteFile(npmrc, []byte(withToken), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := DefaultSecrets(home)
	p.Hidden, p.Readable, p.Redacted = secrets.Hidden, secrets.Readable, secrets.Redacted
	out := (box{}).session(t, p, home, "cat .npmrc; "+plant)
	if strings.Contains(out, "planted") || strings.Contains(out, "npm_secret") || !strings.Contains(out, "fund=false") {
		t.Errorf("session 3, the token hidden: the command read the token or wrote ~/.npmrc:\n%s", out)
	}
	if b, err := os.ReadFile(npmrc); err != nil || string(b) != withToken {
		t.Errorf("~/.npmrc after session 3: %q, %v", b, err)
	}
}
