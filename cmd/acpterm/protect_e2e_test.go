//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// plantEnv is the shell line the plant agent runs itself.
const plantEnv = "ACPTERM_E2E_PLANT"

func init() {
	registerHostile("plant", func() int { return serveAgent(&plantAgent{}) })
}

// plantAgent runs plantEnv's line itself, as an agent's own shell tool
// does, and reports its output in one message.
type plantAgent struct{ baseAgent }

func (a *plantAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	out, _ := exec.CommandContext(ctx, "sh", "-c", os.Getenv(plantEnv)).CombinedOutput()
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: "plant: " + string(out)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// plantLines are what a hostile agent's commands try in the workspace: an
// agent's hooks and MCP servers, an editor's tasks, a shell's rc file, and
// a repository of its own where the workspace, inside the user's
// repository, has none; then an ordinary file. Each prints "planted-…" if
// it worked (printf's arguments: the command line itself does not match).
var plantLines = []string{
	`printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch $MARKER"}]}]}}' > .claude/settings.json && printf '%s-%s\n' planted settings`,
	`echo '{"mcpServers":{"x":{"command":"touch"}}}' > .mcp.json && printf '%s-%s\n' planted mcp`,
	`mkdir -p .gemini && echo '{}' > .gemini/settings.json && printf '%s-%s\n' planted gemini`,
	`echo '{"tasks":[]}' > .vscode/tasks.json && printf '%s-%s\n' planted tasks`,
	`echo 'touch $MARKER' > .bashrc && printf '%s-%s\n' planted bashrc`,
	`git init -q . && git config core.fsmonitor "touch $MARKER #" && printf '%s-%s\n' planted fsmonitor`,
	`echo notes > notes.txt && printf '%s-%s\n' wrote notes`,
}

// protectWorkspace is a workspace in a repository of the user's, with no
// .git of its own, holding a .claude/settings.json, a .vscode and a
// .bashrc.
func protectWorkspace(t *testing.T) string {
	t.Helper()
	outer := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	ws := filepath.Join(outer, "ws")
	for _, d := range []string{".claude", ".vscode"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The user's .bashrc: in a workspace that is not the home directory
	// it is protected where it exists.
	for _, f := range []string{".claude/settings.json", ".bashrc"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// nothingPlanted checks, as the user's next session finds the workspace,
// that nothing of plantLines is there, that no placeholder is left, and
// that git status there runs nothing.
func nothingPlanted(t *testing.T, ws, marker string, want []string) {
	t.Helper()
	for _, f := range []string{".claude/settings.json", ".bashrc"} {
		if b, _ := os.ReadFile(filepath.Join(ws, f)); string(b) != "{}" {
			t.Errorf("%s holds %q", f, b)
		}
	}
	var got []string
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("the workspace holds %q, want %q", got, want)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".vscode")); len(entries) > 0 {
		t.Errorf(".vscode holds %d files", len(entries))
	}
	git := exec.Command("git", "status", "--short")
	git.Dir = ws
	if out, err := git.CombinedOutput(); err != nil {
		t.Errorf("git status: %v\n%s", err, out)
	}
	if exists(marker) {
		t.Errorf("the user's git status ran the planted core.fsmonitor")
	}
}

// TestProtectCommands: the agent's commands (the run's terminals) cannot
// plant what a later, unconfined program runs; the next session finds
// nothing of it.
func TestProtectCommands(t *testing.T) {
	t.Parallel()
	ws := protectWorkspace(t)
	marker := filepath.Join(t.TempDir(), "marker")
	prompt := strings.Join(plantLines, "\n")
	r := acpterm(t, opts{plain: true, dir: ws, env: []string{"MARKER=" + marker}},
		"run", "--approve-all", "-p", prompt, "--", plainAcpterm(t), "agent", "--keep-going")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "planted-") {
		t.Errorf("a command planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "wrote-notes") {
		t.Errorf("the ordinary file was not written")
	}
	nothingPlanted(t, ws, marker, []string{".bashrc", ".claude", ".vscode", "notes.txt"})
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestProtectAgentState: a confined agent (claude's profile, in a
// temporary HOME) cannot plant a SessionStart hook, a command or a plugin
// in its own state, nor in the workspace, while its session is saved; the
// next session finds nothing of it. Under --sandbox read-only too, where
// its state is all it may write.
func TestProtectAgentState(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		flags  []string
		mode   string // on the confinement line
		ws     bool   // the workspace is writable
		wsHome bool   // the workspace is the home directory
	}{
		{"workspace-write", nil, "workspace-write", true, false},
		{"read-only", []string{"--sandbox", "read-only"}, "read-only", false, false},
		// ~/.claude is then among the workspace's protected names; the
		// agent must still write its sessions there.
		{"home", nil, "workspace-write", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testProtectAgentState(t, tt.flags, tt.mode, tt.ws, tt.wsHome)
		})
	}
}

func testProtectAgentState(t *testing.T, flags []string, mode string, wsWritable, wsHome bool) {
	ws := protectWorkspace(t)
	home := t.TempDir()
	if wsHome {
		home = ws
	}
	marker := filepath.Join(t.TempDir(), "marker")
	bin := t.TempDir()
	// Named as claude's adapter, the fake agent gets claude's profile.
	if err := os.Symlink(testExe(t), filepath.Join(bin, "claude-agent-acp")); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".claude")
	// The user's global config: its MCP servers run wherever Claude Code
	// starts, unconfined too.
	const usersJSON = `{"mcpServers":{"mine":{"command":"my-server"}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(usersJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Join(append(slices.Clone(plantLines),
		`printf '{"mcpServers":{"x":{"command":"touch $MARKER"}}}' > "$HOME/.claude.json" && printf '%s-%s\n' planted claude-json`,
		`test "$CLAUDE_CONFIG_DIR" = "$HOME/.claude" && grep -q my-server "$CLAUDE_CONFIG_DIR/.claude.json" && printf '{"numStartups":2}' > "$CLAUDE_CONFIG_DIR/.claude.json" && printf '%s-%s\n' wrote global-config`,
		`printf '{"hooks":{}}' > "$HOME/.claude/settings.json" && printf '%s-%s\n' planted user-settings`,
		`mkdir -p "$HOME/.claude/commands" && echo x > "$HOME/.claude/commands/x.md" && printf '%s-%s\n' planted command`,
		`mkdir -p "$HOME/.claude/plugins/x" && printf '%s-%s\n' planted plugin`,
		`mkdir -p "$HOME/.claude/projects/p" && echo '{}' > "$HOME/.claude/projects/p/s.jsonl" && printf '%s-%s\n' wrote session`,
	), "\n")
	env := []string{fakeAgentEnv + "=plant", plantEnv + "=" + line, "MARKER=" + marker, "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
	args := append(append([]string{"run", "--approve-all"}, flags...), "-p", "go", "--", filepath.Join(bin, "claude-agent-acp"))
	r := acpterm(t, opts{dir: ws, env: env}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "sandbox: agent and its commands: "+mode) {
		t.Errorf("the agent was not confined (%s)", mode)
	}
	if strings.Contains(r.stdout, "planted-") {
		t.Errorf("the agent planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "wrote-session") {
		t.Errorf("stdout lacks \"wrote-session\": the agent could not write its state")
	}
	want := []string{".bashrc", ".claude", ".vscode"}
	if wsHome {
		want = []string{".bashrc", ".claude", ".claude.json", ".vscode"}
	}
	if wsWritable {
		if !strings.Contains(r.stdout, "wrote-notes") {
			t.Errorf("stdout lacks \"wrote-notes\": the agent could not write the workspace")
		}
		want = append(want, "notes.txt")
	}
	nothingPlanted(t, ws, marker, want)
	seed := "{}\n"
	if wsHome {
		seed = "{}" // protectWorkspace's
	}
	if b, _ := os.ReadFile(filepath.Join(state, "settings.json")); string(b) != seed {
		t.Errorf("~/.claude/settings.json holds %q, want %q", b, seed)
	}
	for _, d := range []string{"commands", "plugins", "agents", "hooks"} {
		if _, err := os.Lstat(filepath.Join(state, d)); err == nil {
			t.Errorf("~/.claude/%s exists: planted, or a placeholder left", d)
		}
	}
	if !exists(filepath.Join(state, "projects/p/s.jsonl")) {
		t.Errorf("the agent's session was not saved")
	}
	if !strings.Contains(r.stdout, "wrote-global-config") {
		t.Errorf("stdout lacks \"wrote-global-config\": the agent did not get its own copy of ~/.claude.json, made from the user's, to write")
	}
	// What Claude Code started unconfined next reads.
	if b, _ := os.ReadFile(filepath.Join(home, ".claude.json")); string(b) != usersJSON {
		t.Errorf("~/.claude.json holds %q, want the user's %q", b, usersJSON)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestProtectFS: fs/write_text_file refuses what the commands may not
// write, existing or not; --writable-config lets it through.
func TestProtectFS(t *testing.T) {
	t.Parallel()
	writes := []string{".claude/settings.json", ".claude/settings.local.json", ".mcp.json", ".vscode/tasks.json", ".bashrc", ".gitmodules"}
	for _, tt := range []struct {
		name  string
		flags []string
		ok    bool
	}{
		{"default", nil, false},
		{"writable-config", []string{"--writable-config"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := protectWorkspace(t)
			args := append([]string{"run", "--format", "json", "--approve-all"}, tt.flags...)
			args = append(args, "-p", "go", "--", testExe(t))
			r := acpterm(t, opts{env: []string{fakeAgentEnv + "=fs-git", fsWritesEnv + "=" + strings.Join(writes, ",")}, dir: ws}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
			}
			var calls []fsCall
			fsReport(t, r.stdout, &calls)
			if len(calls) != len(writes) {
				t.Fatalf("%d writes reported, want %d: %+v", len(calls), len(writes), calls)
			}
			for _, c := range calls {
				b, err := os.ReadFile(filepath.Join(ws, c.Name))
				written := err == nil && string(b) == fsPlanted
				switch {
				case tt.ok && (c.Code != 0 || !written):
					t.Errorf("write %s: code %d %q, written %v; want it written", c.Name, c.Code, c.Message, written)
				case !tt.ok && (c.Code != acp.CodePermissionDenied || !strings.Contains(c.Message, "--writable-config") || written):
					t.Errorf("write %s: code %d %q, written %v; want it refused", c.Name, c.Code, c.Message, written)
				}
			}
		})
	}
}

// TestProtectUnprotectable: a protected name that cannot be kept
// read-only (a symlink) is named on the run's first line.
func TestProtectUnprotectable(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.Symlink("elsewhere.json", filepath.Join(ws, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	r := acpterm(t, opts{plain: true, dir: ws}, "run", "--approve-all", "-p", "true", "--", plainAcpterm(t), "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	first, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.Contains(first, "cannot protect") || !strings.Contains(first, ".mcp.json") {
		t.Errorf("stderr's first line %q does not name the unprotected .mcp.json", first)
	}
	r = acpterm(t, opts{plain: true, dir: ws}, "run", "--format", "json", "--approve-all", "-p", "true", "--", plainAcpterm(t), "agent")
	var named bool
	for _, ev := range ofKind(parseEvents(t, r.stdout), "terminal_created") {
		sb, _ := ev["sandbox"].(map[string]any)
		missing, _ := sb["missing"].([]any)
		for _, m := range missing {
			named = named || strings.Contains(fmt.Sprint(m), "cannot protect") && strings.Contains(fmt.Sprint(m), ".mcp.json")
		}
	}
	if !named {
		t.Errorf("no terminal_created event's sandbox.missing names the unprotected .mcp.json:\n%s", r.stdout)
	}
}

// TestProtectKilled: a kill -9 of acpterm leaves the placeholders of the
// protected names that did not exist (empty directories, or empty files
// for names of files, marked); the next
// session in that workspace takes them over and removes them at its end.
func TestProtectKilled(t *testing.T) {
	t.Parallel()
	s := startAcpterm(t, nil, "run", "--format", "json", "--approve-all", "-p", "sleep 30", "--", acptermBin, "agent")
	s.stdout.waitFor(t, `"event":"terminal_created"`)
	ws := s.cmd.Dir
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.wait()
	if b, err := os.ReadFile(filepath.Join(ws, ".mcp.json")); err != nil || string(b) != "{\"mcpServers\":{}}\n" {
		t.Fatalf("after a kill -9, .mcp.json: %q, %v; want the placeholder left (a file holding {\"mcpServers\":{}})", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, ".vscode")); err != nil || !fi.IsDir() {
		t.Fatalf("after a kill -9, .vscode: %v, %v; want the placeholder left (an empty directory)", fi, err)
	}
	r := acpterm(t, opts{plain: true, dir: ws}, "run", "--approve-all", "-p", "true", "--", plainAcpterm(t), "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(ws); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("after the next session the workspace holds %q, want nothing", names)
	}
}

// TestProtectOpencodeWorkspace: confined, an agent with opencode's profile
// finds a .opencode of its own in the workspace, where it writes its
// .gitignore (as opencode does at every start, and fails on a read-only
// one), and cannot plant a plugin or a config there that opencode started
// later unconfined would run; the next session finds neither. In
// read-only mode the same holds of a .opencode the workspace has, and
// the rest of the workspace is not written.
func TestProtectOpencodeWorkspace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		line  string // the confinement line
	}{
		{"workspace-write", nil, "sandbox: agent and its commands: workspace-write"},
		{"read-only", []string{"--sandbox", "read-only"}, "sandbox: agent and its commands: read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, home := t.TempDir(), t.TempDir()
			if tc.name == "read-only" {
				// Read-only makes none: the workspace has one.
				if err := os.Mkdir(filepath.Join(ws, ".opencode"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			bin := t.TempDir()
			if err := os.Symlink(testExe(t), filepath.Join(bin, "opencode")); err != nil {
				t.Fatal(err)
			}
			line := strings.Join([]string{
				`printf 'node_modules\n' > .opencode/.gitignore && printf '%s-%s\n' wrote gitignore`,
				`mkdir -p .opencode/plugin && echo 'x' > .opencode/plugin/x.js && printf '%s-%s\n' planted plugin`,
				`echo '{"mcp":{}}' > .opencode/opencode.json && printf '%s-%s\n' planted config`,
				`mkdir -p .opencode/node_modules/x && printf '%s-%s\n' planted module`,
				`echo 'registry=http://127.0.0.1:1/' > .opencode/.npmrc && printf '%s-%s\n' planted npmrc`,
				`echo x > outside-opencode && printf '%s-%s\n' wrote workspace`,
			}, "\n")
			env := []string{fakeAgentEnv + "=plant", plantEnv + "=" + line, "HOME=" + home,
				"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
			args := append(append([]string{"run", "--approve-all"}, tc.flags...), "-p", "go", "--", filepath.Join(bin, "opencode"))
			r := acpterm(t, opts{dir: ws, env: env}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tc.line)
			if !strings.Contains(r.stdout, "wrote-gitignore") {
				t.Errorf("the agent could not write .opencode/.gitignore:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "planted-") {
				t.Errorf("the agent planted:\n%s", r.stdout)
			}
			if wrote := strings.Contains(r.stdout, "wrote-workspace"); wrote != (tc.name == "workspace-write") {
				t.Errorf("the agent wrote the workspace outside .opencode: %v", wrote)
			}
			for _, f := range []string{"plugin", "opencode.json", "node_modules", ".npmrc"} {
				if _, err := os.Lstat(filepath.Join(ws, ".opencode", f)); err == nil {
					t.Errorf("the next session finds .opencode/%s: planted, or a placeholder left", f)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}
}
