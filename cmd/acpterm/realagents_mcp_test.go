//go:build realagents

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRealAgentsMCP takes real agents through a turn in which the
// scripted model calls the exec_command of the MCP server acpterm run
// offers (acpterm run --mcp), not the agent's own shell: the command
// runs as one of acpterm's terminals, in its sandbox, shown live, and its
// output goes back to the model.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsMCP -v
//
// ACPTERM_REAL_AGENTS_ONLY=claude,codex limits it to some agents.
func TestRealAgentsMCP(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if !slices.Contains(mcpAgents, a.name) ||
			only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			// Confined as by default, the network limited to the
			// agent's list: the relay it starts reaches the run through
			// a loopback port forwarded into its namespace.
			env, flags := useOfferedMCP(&a)
			var mu sync.Mutex
			offered := map[string]bool{}
			prefer := a.prefer
			a.prefer = func(name string) bool {
				mu.Lock()
				offered[name] = true
				mu.Unlock()
				return prefer(name)
			}
			// The command also tries to write outside the workspace,
			// which acpterm's sandbox refuses.
			outside := filepath.Join(t.TempDir(), "written-by-the-command")
			a.command = fmt.Sprintf("touch %s 2>/dev/null; printf '%%s-%%s\\n' acpterm-real %s", outside, "mcp"+a.name)
			s := runScripted(t, bin, a, flags, "mcp"+a.name, "", env...)
			if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the command wrote outside the workspace (%s: %v)", outside, err)
			}
			r := s.r
			mu.Lock()
			t.Logf("tools offered to the model: %v", slices.Sorted(maps.Keys(offered)))
			mu.Unlock()
			t.Logf("exit %d after %v; tool called %v, ran %v\nstdout:\n%.4000s\nstderr:\n%.4000s",
				r.code, r.elapsed.Round(time.Millisecond), s.called, s.ran, r.stdout, r.stderr)
			var tools []string
			for _, c := range s.m.Calls() {
				if c.Tool != "" {
					tools = append(tools, c.Tool)
				}
			}
			if !slices.ContainsFunc(tools, func(n string) bool { return strings.Contains(n, "acpterm") }) {
				t.Fatalf("the model was never offered the acpterm server's exec_command (tools called: %q)", tools)
			}
			if !s.ran {
				t.Errorf("the model server never got the command's output back")
			}
			// acpterm ran it, sandboxed. Claude Code and Codex name the
			// tool call in the MCP call's _meta; Qwen Code reports the
			// arguments as its rawInput before the command runs, opencode
			// just after, Gemini CLI as the text of the permission request
			// that is its only report before the command: the output is
			// shown under the agent's own tool call (its block, ✓ and the
			// title), once.
			underCall := regexp.MustCompile(`(?m)^✓ [^\n]*\n  \$ ` + regexp.QuoteMeta(s.m.Command) + `\n(  │ [^\n]*\n)*  │ ` + regexp.QuoteMeta(s.m.Output) +
				`\n(  │ [^\n]*\n)*  └ exit 0[^\n]*sandbox: workspace-write`)
			switch {
			case !strings.Contains(r.stdout, "sandbox: workspace-write"):
				t.Errorf("the command is not shown as acpterm's sandboxed terminal")
			case !underCall.MatchString(r.stdout) || strings.Contains(r.stdout, "\n$ "+s.m.Command):
				t.Errorf("the command's output is not shown under the agent's tool call, once")
			}
			if r.code != 0 {
				t.Errorf("exit %d, want 0", r.code)
			}
		})
	}
}

// mcpAgents are the agents whose MCP client the offered server is tested
// with.
var mcpAgents = []string{"claude", "codex", "gemini", "opencode", "qwen"}

// useOfferedMCP sets a up so that its scripted model is offered, and
// calls, acpterm's exec_command, and returns acpterm run's environment
// and flags for that.
func useOfferedMCP(a *scriptedAgent) (env, flags []string) {
	a.prefer = func(name string) bool {
		return strings.Contains(name, "acpterm") && strings.HasSuffix(name, "exec_command")
	}
	flags = []string{"--mcp"}
	switch a.name {
	case "claude":
		// Claude Code defers MCP tools behind its ToolSearch tool,
		// which a scripted model does not call: load them at once.
		env = append(env, "ENABLE_TOOL_SEARCH=false")
		// Its auto mode asks a classifier (the scripted model cannot
		// answer it) about MCP tools; default mode asks the client,
		// which --approve-all answers.
		flags = append(flags, "--mode", "default")
	case "gemini":
		// Gemini CLI starts a stdio MCP server only in a trusted folder
		// ("gemini trust"), and a fresh home trusts none.
		env = append(env, "GEMINI_CLI_TRUST_WORKSPACE=true")
	case "qwen":
		// Qwen Code defers MCP tools behind tool_search; tools named in
		// tools.visible are offered at once.
		files := a.files
		a.files = func(url string) map[string]string {
			m := map[string]string{".qwen/settings.json": `{"tools": {"visible": ["mcp__acpterm__exec_command"]}}`}
			if files != nil {
				maps.Copy(m, files(url))
			}
			return m
		}
	}
	return env, flags
}
