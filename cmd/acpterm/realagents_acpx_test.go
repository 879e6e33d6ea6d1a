//go:build realagents

package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// acpxEnv names the acpx program (0.19.1, from npm) that
// TestRealAgentsBesideAcpx runs beside acpterm.
const acpxEnv = "ACPTERM_ACPX"

// acpxPrompt is the scripted turn's prompt, the same for both clients.
const acpxPrompt = "Run the command, then say what it printed."

// TestRealAgentsBesideAcpx runs each real agent's scripted turn under
// acpterm (as a user runs it: `acpterm run --approve-all -p PROMPT NAME`,
// the agent confined by default) and under acpx (`acpx --approve-all
// --agent COMMAND exec PROMPT`, the same program and arguments acpterm
// starts), alternated, N runs each (ACPTERM_REAL_AGENTS_RUNS, default 5),
// every run with a fresh home, workspace and model server. It logs the
// median wall times and their ratio per agent, and when each printed the
// reply (stdout and stderr on one pipe); acpterm's median above acpx's is
// an error.
//
//	npm install --prefix /tmp/acpx acpx@0.19.1
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR ACPTERM_ACPX=/tmp/acpx/node_modules/.bin/acpx \
//	  go test ./cmd/acpterm -run TestRealAgentsBesideAcpx -v -timeout 30m
func TestRealAgentsBesideAcpx(t *testing.T) {
	acpx := os.Getenv(acpxEnv)
	if os.Getenv(realAgentsEnv) == "" || acpx == "" {
		t.Skipf("set %s=1 and %s=PATH (acpx 0.19.1) to time the real agents under acpterm and under acpx", realAgentsEnv, acpxEnv)
	}
	n := 5
	if s := os.Getenv("ACPTERM_REAL_AGENTS_RUNS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > 50 {
			t.Fatalf("ACPTERM_REAL_AGENTS_RUNS=%q: want 1 to 50", s)
		}
	}
	bin := installRealAgents(t)
	acp := screenBin(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	var table strings.Builder
	// The reply's time says where a difference lies: before it (start-up,
	// the turn) or after it (the agent's shutdown).
	table.WriteString("| agent | acpterm median s | acpx median s | ratio | acpterm reply at s | acpx reply at s |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		command := acpxCommand(t, acp, a)
		var mine, theirs []timed
		for i := range n {
			// Alternated, and each pair in the other order the next time:
			// neither client always runs on a warmer machine.
			runs := []func(){
				func() { mine = append(mine, timeAcpterm(t, acp, bin, a, fmt.Sprintf("%sx%d", a.name, i))) },
				func() { theirs = append(theirs, timeAcpx(t, acpx, bin, a, command, fmt.Sprintf("%sy%d", a.name, i))) },
			}
			if i%2 == 1 {
				slices.Reverse(runs)
			}
			for _, run := range runs {
				run()
			}
		}
		mm, mt := medianDuration(walls(mine)), medianDuration(walls(theirs))
		rm, rt := medianDuration(replies(mine)), medianDuration(replies(theirs))
		ratio := mm.Seconds() / mt.Seconds()
		fmt.Fprintf(&table, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", a.name, mm.Seconds(), mt.Seconds(), ratio, rm.Seconds(), rt.Seconds())
		t.Logf("%s: acpterm %v (reply at %v), acpx %v (reply at %v)", a.name, roundAll(walls(mine)), roundAll(replies(mine)), roundAll(walls(theirs)), roundAll(replies(theirs)))
		if mm > mt {
			t.Errorf("%s: acpterm's median %v is above acpx's %v (%.2f×)", a.name, mm.Round(time.Millisecond), mt.Round(time.Millisecond), ratio)
		}
	}
	t.Logf("%d runs each, alternated:\n%s", n, table.String())
}

func walls(r []timed) []time.Duration {
	out := make([]time.Duration, len(r))
	for i, v := range r {
		out[i] = v.wall
	}
	return out
}

func replies(r []timed) []time.Duration {
	out := make([]time.Duration, len(r))
	for i, v := range r {
		out[i] = v.reply
	}
	return out
}

func roundAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, v := range d {
		out[i] = v.Round(10 * time.Millisecond)
	}
	return out
}

// acpxCommand is the agent command acpx is given for a: the program and
// arguments acpterm starts for it, as `acpterm agents` shows them.
// (codex-acp 2.6 reads nothing from its command line; unconfined, its
// default mode runs commands in the bubblewrap codex bundles.)
func acpxCommand(t *testing.T, acp string, a scriptedAgent) string {
	t.Helper()
	words := append(agentCommand(t, acp, a.name), a.args...)
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

// timed is one timed run: its wall time, and when the reply was printed.
type timed struct{ wall, reply time.Duration }

// timeAcpterm runs a's scripted turn under acpterm; a run that did not
// complete the turn fails the test.
func timeAcpterm(t *testing.T, acp, bin string, a scriptedAgent, marker string) timed {
	t.Helper()
	m := newModelServer(marker)
	defer m.Close()
	env := scriptedHome(t, bin, a, m, nil)
	r := runCombined(t, acp, t.TempDir(), env, 150*time.Second, m.Reply, scriptedArgs(a)...)
	checkTimedRun(t, "acpterm", a, m, r)
	return timed{r.elapsed, r.reply}
}

// timeAcpx runs a's scripted turn under acpx.
func timeAcpx(t *testing.T, acpx, bin string, a scriptedAgent, command, marker string) timed {
	t.Helper()
	m := newModelServer(marker)
	defer m.Close()
	env := scriptedHome(t, bin, a, m, []string{"--sandbox-agent=false"})
	ws := t.TempDir()
	r := runCombined(t, acpx, ws, env, 150*time.Second, m.Reply,
		"--approve-all", "--format", "text", "--cwd", ws, "--timeout", "90", "--agent", command, "exec", acpxPrompt)
	checkTimedRun(t, "acpx", a, m, r)
	return timed{r.elapsed, r.reply}
}

// checkTimedRun fails the test unless r completed the scripted turn: exit
// 0, the command ran, the reply shown.
func checkTimedRun(t *testing.T, client string, a scriptedAgent, m *modelServer, r combined) {
	t.Helper()
	_, ran := m.ToolCalled()
	if r.code != 0 || !ran || r.reply == 0 {
		t.Fatalf("%s %s: exit %d, command ran %v, reply shown %v:\n%.4000s", client, a.name, r.code, ran, r.reply != 0, r.out)
	}
}
