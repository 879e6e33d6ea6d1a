//go:build linux && realagents

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// TestRealAgentsV2Background: claude-agent-acp over ACP v2, confined by
// default, typed at in a tmux pane. Its model starts a dev server in the
// background (Claude Code's Bash with run_in_background: `sleep 1000`);
// after the turn acpterm says one item still runs, /jobs lists it from
// the agent's state_update as one acpterm can stop, /cancel sends
// terminal/cancel and shows the exit the agent reports, and the process
// is gone; nothing of it is left when the session ends.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsV2Background -v
func TestRealAgentsV2Background(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	a := scriptedAgents[slices.IndexFunc(scriptedAgents, func(a scriptedAgent) bool { return a.name == "claude" })]
	mark := bgMark("claude-bg")
	m := newModelServer(mark)
	defer m.Close()
	// exec -a names the process by the mark: Claude Code does not pass
	// acpterm's environment on to its commands.
	m.Command = "exec -a " + mark + " sleep 1000"
	m.Args = map[string]any{"run_in_background": true, "description": "Start the dev server"}
	env, _ := scriptedEnv(t, bin, a, m, nil, "")
	// Claude Code's default mode, auto, asks the model to classify a
	// command first, which the model server cannot answer; in "default"
	// it asks acpterm, and --approve-all allows.
	p := startTmux(t, t.TempDir(), env, acptermBin, "run", "--no-color", "--approve-all", "--protocol", "2", "--mode", "default", "claude")
	p.waitRaw("› ", 60*time.Second)
	p.typeSlowly("› ", "", "start it")
	p.tmux("send-keys", "-t", "acpterm", "Enter")
	p.waitRaw(m.Reply, 90*time.Second)
	p.waitRaw("1 still running: /jobs to list, /cancel ID to stop one", 30*time.Second)
	pids := namedProcesses(t, mark)
	if len(pids) == 0 {
		t.Fatalf("no process of the background command runs after the turn; the screen:\n%s", strings.Join(p.screen(), "\n"))
	}
	p.typeSlowly("› ", "", "/jobs")
	p.tmux("send-keys", "-t", "acpterm", "Enter")
	p.waitFor("the job's line", 20*time.Second, func(screen []string, _ string) bool {
		return slices.ContainsFunc(screen, func(l string) bool {
			return strings.HasPrefix(l, "1 ") && strings.Contains(l, " yes ") && strings.Contains(l, "sleep 1000")
		})
	})
	p.typeSlowly("› ", "", "/cancel 1")
	p.tmux("send-keys", "-t", "acpterm", "Enter")
	p.waitRaw("stopped 1 (", 30*time.Second)
	if err := proctest.WaitExit(pids, 10*time.Second); err != nil {
		t.Errorf("the background command after /cancel: %v", err)
	}
	if left := namedProcesses(t, mark); len(left) != 0 {
		t.Errorf("still alive after /cancel: %v", left)
	}
	p.typeSlowly("› ", "", "/jobs")
	p.tmux("send-keys", "-t", "acpterm", "Enter")
	p.waitRaw("nothing is running in the background", 20*time.Second)
	p.tmux("send-keys", "-t", "acpterm", "C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	t.Logf("the screen:\n%s", strings.Join(p.screen(), "\n"))
}

// namedProcesses are the live processes whose argv[0] is name.
func namedProcesses(t *testing.T, name string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		argv0, _, _ := bytes.Cut(b, []byte{0})
		if err != nil || string(argv0) != name {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
