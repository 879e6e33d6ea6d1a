//go:build realagents && linux

package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// TestRealAgentsMCPRemote: the MCP server that acpterm run --mcp offers,
// with --remote ssh://… to a real sshd: the agent runs here, confined,
// its scripted model calls the offered exec_command, and the command runs
// on the target, shown under the agent's own tool call with where it
// ran, its output back to the model. Claude Code and Codex, which name
// their tool call in the MCP call.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsMCPRemote -v
func TestRealAgentsMCPRemote(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	s := needSSHD(t)
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if !slices.Contains([]string{"claude", "codex"}, a.name) ||
			only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			a.prefer = func(name string) bool {
				return strings.Contains(name, "acpterm") && strings.HasSuffix(name, "exec_command")
			}
			dir := targetDir(t)
			flags := append([]string{"--mcp"}, remoteArgs(t, s, dir)...)
			var env []string
			if a.name == "claude" {
				// As in TestRealAgentsMCP: the MCP tools offered at once,
				// and the client asked about them.
				env = append(env, "ENABLE_TOOL_SEARCH=false")
				flags = append(flags, "--mode", "default")
			}
			run := runScripted(t, bin, a, flags, "mcpremote"+a.name, "", env...)
			r := run.r
			t.Logf("exit %d after %v; tool called %v, ran %v\nstdout:\n%.4000s\nstderr:\n%.4000s",
				r.code, r.elapsed.Round(time.Millisecond), run.called, run.ran, r.stdout, r.stderr)
			if r.code != 0 || !run.ran {
				t.Fatalf("exit %d, the command's output back %v", r.code, run.ran)
			}
			// Under the agent's tool call (no block of its own), and on
			// the target.
			if !strings.Contains(r.stdout, "  $ "+run.m.Command+"\n") || strings.Contains(r.stdout, "\n$ "+run.m.Command) {
				t.Errorf("the command is not shown under the agent's tool call, once")
			}
			if !strings.Contains(r.stdout, "on ssh://"+sshtest.Host) {
				t.Errorf("the screen does not say the command ran on ssh://%s", sshtest.Host)
			}
		})
	}
}
