//go:build realagents

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The agents that serve ACP v2 (claude-agent-acp ≥ 0.95, codex-acp ≥ 2.3).
var v2Agents = []string{"claude", "codex"}

// v2Scripted is each v2 agent of scriptedAgents, as ACPTERM_REAL_AGENTS_ONLY
// allows.
func v2Scripted() []scriptedAgent {
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	var out []scriptedAgent
	for _, a := range scriptedAgents {
		if slices.Contains(v2Agents, a.name) && (only == "" || slices.Contains(strings.Split(only, ","), a.name)) {
			out = append(out, a)
		}
	}
	return out
}

// runRecorded runs a scripted turn of a with --protocol p, the agent run
// by its command line behind the wire recorder (unconfined: the recorder
// is not the agent's profile), and returns the run and its wire log.
func runRecorded(t *testing.T, bin string, a scriptedAgent, cmd []string, p, marker string) (scriptedRun, string) {
	t.Helper()
	wire := filepath.Join(t.TempDir(), "wire.jsonl")
	if dir := os.Getenv("ACPTERM_REAL_AGENTS_WIRE"); dir != "" {
		// Kept to read: one file per agent and version.
		wire = filepath.Join(dir, a.name+"-v"+p+".jsonl")
		os.Remove(wire)
	}
	env := []string{fakeAgentEnv + "=wirelog", wireLogEnv + "=" + wire}
	if a.name == "claude" && os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1") // not confined, so not told by acpterm
	}
	agent := append(append([]string{"--", testExe(t)}, cmd...), a.args...)
	return runScriptedAs(t, bin, a, agent, []string{"--protocol", p}, marker, "", env...), wire
}

// turnScreen is the part of a screen that the turn's ACP messages make,
// which is to be the same on both versions: the session's mode and model
// line, then everything from the first tool call on. What comes before
// that is the agent's to choose by version: claude-agent-acp 0.101 lists
// other slash commands over v2, and sends an informational warning about
// its auto mode over v1 only.
func turnScreen(s string) string {
	var b strings.Builder
	started := false
	for line := range strings.Lines(s) {
		switch {
		case started:
		case strings.HasPrefix(line, "mode ") || strings.HasPrefix(line, "model "):
		case strings.HasPrefix(line, "✓ ") || strings.HasPrefix(line, "✗ ") || strings.HasPrefix(line, "… "):
			started = true
		default:
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// TestRealAgentsV2 takes claude and codex through a command-running turn
// against the scripted model server over ACP v1 and over v2: both exit 0
// with the command's output and the reply on the screen, the two screens
// are the same (timings aside), and the v2 wire shows version 2 agreed
// and the turn ended by an idle state_update.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run 'TestRealAgentsV2$' -v
func TestRealAgentsV2(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	for _, a := range v2Scripted() {
		t.Run(a.name, func(t *testing.T) {
			cmd := agentCommand(t, acptermBin, a.name)
			screens := map[string]string{}
			for _, p := range []string{"1", "2"} {
				s, wire := runRecorded(t, bin, a, cmd, p, a.name+"v2")
				r := s.r
				t.Logf("--protocol %s: exit %d after %v\nstdout:\n%.4000s\nstderr:\n%.2000s", p, r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
				if r.code != 0 || !s.ran || !strings.Contains(r.stdout, s.m.Reply) || !strings.Contains(r.stdout, s.m.Output) {
					t.Errorf("--protocol %s: exit %d, command ran %v; want 0, the command's output %q and the reply %q on the screen", p, r.code, s.ran, s.m.Output, s.m.Reply)
				}
				screens[p] = turnScreen(normalScreen(r.stdout))
				if p == "2" {
					checkV2Wire(t, wire)
				}
			}
			if screens["1"] != screens["2"] {
				t.Errorf("the screens differ\nv1:\n%s\nv2:\n%s", screens["1"], screens["2"])
			}
		})
	}
}

// wirePhases are the times of a recorded run's phases, in ms, from the
// wire log: initialize, session/new, the turn (session/prompt sent to
// the agent's last message), and the shutdown (the end of the client's
// input to the agent's exit).
type wirePhases struct{ init, new, turn, shutdown float64 }

func phasesOf(t *testing.T, wire string) wirePhases {
	t.Helper()
	sent := map[string]float64{} // method → when the client sent it
	ids := map[string]string{}
	var p wirePhases
	var eof, last float64
	for _, r := range readWire(t, wire) {
		var m wireMsg
		_ = json.Unmarshal(r.Msg, &m)
		switch r.Dir {
		case "client":
			if m.Method != "" && m.ID != nil {
				sent[m.Method], ids[string(m.ID)] = r.Ms, m.Method
			}
		case "agent":
			last = r.Ms
			switch method := ids[string(m.ID)]; {
			case m.Result == nil:
			case method == "initialize":
				p.init = r.Ms - sent[method]
			case method == "session/new":
				p.new = r.Ms - sent[method]
			}
		case "client-eof":
			eof = r.Ms
		case "agent-exit":
			p.shutdown = r.Ms - eof
		}
	}
	p.turn = last - sent["session/prompt"]
	return p
}

// TestRealAgentsV2Cost measures claude's and codex's scripted turn over
// v1 and v2, alternated, N runs each (ACPTERM_REAL_AGENTS_RUNS, default
// 5), and logs the medians of the whole run and of its phases (from the
// wire, recorded for each run), with the ratio of the whole; above 1.05 is
// an error. Each agent runs by name, confined as a user runs it
// (ACPTERM_V2COST_FLAGS adds flags to these runs), and by its command
// line, unconfined, behind the wire recorder.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsV2Cost -v
func TestRealAgentsV2Cost(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	n := 5
	if v := os.Getenv("ACPTERM_REAL_AGENTS_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 50 {
			t.Fatalf("ACPTERM_REAL_AGENTS_RUNS=%q: want 1 to 50", v)
		}
	}
	bin := installRealAgents(t)
	var table strings.Builder
	table.WriteString("| agent | run as | v1 median s | v2 median s | ratio | v1 init / new / turn / shutdown ms | v2 init / new / turn / shutdown ms |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, a := range v2Scripted() {
		cmd := agentCommand(t, acptermBin, a.name)
		// By name, confined as a user runs it; by its command line behind
		// the recorder, unconfined, with the wire's phases; and with
		// ACPTERM_V2COST_CONFINED_WIRE set, by name and confined with the
		// recorder inside the sandbox, in front of the agent's program
		// (found first on PATH), for the phases of a confined run.
		variants := []string{"name", "recorded"}
		if os.Getenv("ACPTERM_V2COST_CONFINED_WIRE") != "" {
			variants = append(variants, "name-recorded")
		}
		for _, variant := range variants {
			recorded := variant == "recorded"
			wrapped := variant == "name-recorded"
			var wrapper string
			if wrapped {
				wrapper = recorderOnPath(t, bin, cmd)
			}
			runs := map[string][]time.Duration{}
			phases := map[string][]wirePhases{}
			for i := range n {
				for _, p := range []string{"1", "2"} {
					marker := fmt.Sprintf("%sc%d", a.name, i)
					var s scriptedRun
					switch {
					case recorded:
						var wire string
						s, wire = runRecorded(t, bin, a, cmd, p, marker)
						phases[p] = append(phases[p], phasesOf(t, wire))
					case wrapped:
						flags := append([]string{"--protocol", p}, strings.Fields(os.Getenv("ACPTERM_V2COST_FLAGS"))...)
						s = runScriptedAs(t, bin, a, append([]string{a.name}, a.args...), flags, marker, "",
							"PATH="+wrapper+string(os.PathListSeparator)+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
						phases[p] = append(phases[p], phasesOf(t, filepath.Join(s.ws, "acpterm-wire.jsonl")))
					default:
						flags := append([]string{"--protocol", p}, strings.Fields(os.Getenv("ACPTERM_V2COST_FLAGS"))...)
						s = runScriptedAs(t, bin, a, append([]string{a.name}, a.args...), flags, marker, "")
					}
					if s.r.code != 0 || !s.ran {
						t.Errorf("%s --protocol %s: exit %d, command ran %v\n%.2000s", a.name, p, s.r.code, s.ran, s.r.stderr)
					}
					runs[p] = append(runs[p], s.r.elapsed)
				}
			}
			how, p1, p2 := "name, confined", "", ""
			switch {
			case recorded:
				how, p1, p2 = "command line, unconfined, recorded", phaseMedians(phases["1"]), phaseMedians(phases["2"])
			case wrapped:
				how, p1, p2 = "name, confined, recorded", phaseMedians(phases["1"]), phaseMedians(phases["2"])
			}
			t.Logf("%s (%s): v1 %v, v2 %v", a.name, how, roundAll(runs["1"]), roundAll(runs["2"]))
			m1, m2 := medianDuration(runs["1"]), medianDuration(runs["2"])
			ratio := m2.Seconds() / m1.Seconds()
			fmt.Fprintf(&table, "| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n", a.name, how, m1.Seconds(), m2.Seconds(), ratio, p1, p2)
			if ratio > 1.05 {
				t.Errorf("%s (%s): the v2 median %v is %.2f× the v1 %v", a.name, how, m2, ratio, m1)
			}
		}
	}
	t.Logf("%d runs each, alternated:\n%s", n, table.String())
}

// recorderOnPath makes a directory holding a program named as the
// agent's (cmd[0]) that runs it behind the wire recorder, logging to
// acpterm-wire.jsonl in its working directory (the workspace, writable
// in the sandbox), and returns the directory, to put first on PATH.
func recorderOnPath(t *testing.T, bin string, cmd []string) string {
	t.Helper()
	dir := t.TempDir()
	// The program by its path: by name, the recorder would find this
	// directory's first, and start itself again without end.
	real := cmd[0]
	if !filepath.IsAbs(real) {
		real = filepath.Join(bin, real)
	}
	if _, err := os.Stat(real); err != nil {
		t.Fatalf("the agent's program: %v", err)
	}
	var script strings.Builder
	script.WriteString("#!/bin/sh\nexec env " + fakeAgentEnv + "=wirelog " + wireLogEnv + "=\"$PWD/acpterm-wire.jsonl\" " + shellQuote(testExe(t)) + " " + shellQuote(real))
	for _, w := range cmd[1:] {
		script.WriteString(" " + shellQuote(w))
	}
	script.WriteString(" \"$@\"\n")
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(cmd[0])), []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// phaseMedians words the median of each phase.
func phaseMedians(ps []wirePhases) string {
	med := func(f func(wirePhases) float64) float64 {
		var d []time.Duration
		for _, p := range ps {
			d = append(d, time.Duration(f(p)*float64(time.Millisecond)))
		}
		return float64(medianDuration(d)) / float64(time.Millisecond)
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", med(func(p wirePhases) float64 { return p.init }), med(func(p wirePhases) float64 { return p.new }),
		med(func(p wirePhases) float64 { return p.turn }), med(func(p wirePhases) float64 { return p.shutdown }))
}
