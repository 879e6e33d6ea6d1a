//go:build realagents

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// What a person sees of the seven real agents' scripted turns (issue 20):
// the command's output under its tool call, in text and in --format json;
// the turn's end before anything about the agent's shutdown; no warning
// for an agent that stops the way it always does.

// screenAcptermEnv names another acpterm binary to run in these tests in
// place of the one built from this tree: an older build, to see a check
// fail on it, or an installed one, to measure it.
const screenAcptermEnv = "ACPTERM_REAL_AGENTS_ACPTERM"

// screenBin is the acpterm the real-agent screen tests run: the one
// screenAcptermEnv names, else this tree's, built without the race
// detector (these runs are about what is shown and how fast).
func screenBin(t testing.TB) string {
	t.Helper()
	if b := os.Getenv(screenAcptermEnv); b != "" {
		return b
	}
	return plainAcpterm(t)
}

// scriptedHome makes a fresh home for a against m, and returns the
// environment of a run in it with flags: runScripted's (scriptedEnv).
func scriptedHome(t testing.TB, bin string, a scriptedAgent, m *modelServer, flags []string) []string {
	t.Helper()
	env, _ := scriptedEnv(t, bin, a, m, flags, "")
	return env
}

// combined is a run whose stdout and stderr were one pipe, so that the
// order of what it printed on each is kept.
type combined struct {
	out     string
	code    int
	elapsed time.Duration
	reply   time.Duration // when the mark was first seen, from the start
}

// stampedBuffer keeps what is written to it and the time mark first
// appeared in it. os/exec's copying goroutine is its only writer.
type stampedBuffer struct {
	buf   bytes.Buffer
	start time.Time
	mark  string
	seen  time.Duration
}

func (b *stampedBuffer) Write(p []byte) (int, error) {
	b.buf.Write(p)
	if b.seen == 0 && b.mark != "" && bytes.Contains(b.buf.Bytes()[max(0, b.buf.Len()-len(p)-len(b.mark)):], []byte(b.mark)) {
		b.seen = time.Since(b.start)
	}
	return len(p), nil
}

// runCombined runs bin in dir with stdout and stderr on one pipe, bounded,
// and notes when mark is first printed.
func runCombined(t testing.TB, bin, dir string, env []string, bound time.Duration, mark string, args ...string) combined {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	start := time.Now()
	out := &stampedBuffer{start: start, mark: mark}
	// One writer for both: os/exec then gives the child one pipe as its
	// fd 1 and fd 2.
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	r := combined{out: out.buf.String(), elapsed: time.Since(start), reply: out.seen}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%q was still running after %v (killed):\n%.4000s", args, bound, r.out)
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%q: %v\n%.4000s", args, err, r.out)
	}
	checkNoRace(t, r.out)
	assertNoCgroups(t, cmd.Process.Pid)
	return r
}

// shutdownWarnings are what acpterm says when an agent did not stop as
// asked; a normal stop (stdin closed, or SIGTERM after it) says none.
var shutdownWarnings = []string{"had to be signalled", "SIGKILL", "did not exit"}

// screenFlagsEnv adds flags to every run of these tests, split at spaces:
// "--sandbox-agent=false", or what an older build needs.
const screenFlagsEnv = "ACPTERM_REAL_AGENTS_FLAGS"

// scriptedArgs are the words of a scripted turn's acpterm run.
func scriptedArgs(a scriptedAgent, flags ...string) []string {
	const turnTimeout = 90 * time.Second
	args := append([]string{"run", "--approve-all", "--turn-timeout", turnTimeout.String()}, flags...)
	args = append(args, strings.Fields(os.Getenv(screenFlagsEnv))...)
	args = append(args, "-p", "Run the command, then say what it printed.", a.name)
	return append(args, a.args...)
}

// TestRealAgentsScreen runs each real agent's scripted turn as a user
// gets it by default (the agent confined), twice: in text with stdout and
// stderr on one pipe, and with --format json. It checks that the
// command's output is shown under its tool call wherever the agent sends
// it (gemini sends none), codex's rawOutput included; that the reply is
// printed before anything about the agent's shutdown; and that an agent
// that stops normally is not warned about.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test ./cmd/acpterm -run TestRealAgentsScreen -v
func TestRealAgentsScreen(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	acp := screenBin(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			t.Run("text", func(t *testing.T) {
				m := newModelServer(a.name + "-t")
				defer m.Close()
				env := scriptedHome(t, bin, a, m, nil)
				r := runCombined(t, acp, t.TempDir(), env, 150*time.Second, m.Reply, scriptedArgs(a)...)
				t.Logf("exit %d after %v:\n%.6000s", r.code, r.elapsed.Round(time.Millisecond), r.out)
				checkTextScreen(t, a, m, r)
			})
			t.Run("json", func(t *testing.T) {
				m := newModelServer(a.name + "-j")
				defer m.Close()
				env := scriptedHome(t, bin, a, m, nil)
				r := runBinary(t, acp, opts{env: env, bound: 150 * time.Second}, scriptedArgs(a, "--format", "json")...)
				t.Logf("exit %d after %v\nstdout:\n%.8000s\nstderr:\n%.3000s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
				checkJSONScreen(t, a, m, r)
			})
		})
	}
}

// checkTextScreen checks a text run's screen (stdout and stderr in the
// order they were written).
func checkTextScreen(t *testing.T, a scriptedAgent, m *modelServer, r combined) {
	t.Helper()
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	reply := strings.Index(r.out, m.Reply)
	if reply < 0 {
		t.Fatalf("no reply %q", m.Reply)
	}
	for _, w := range shutdownWarnings {
		if strings.Contains(r.out, w) {
			t.Errorf("a warning about the agent's shutdown (%q) for a normal stop", w)
		}
	}
	// acpterm's own remarks about the run, but for the confinement line
	// at its start and the network's refusals (said as they happen),
	// come after the reply: the turn's end is shown the moment
	// session/prompt answers, the agent's shutdown after it.
	at := 0
	for line := range strings.Lines(r.out) {
		live := strings.HasPrefix(line, "acpterm: sandbox:") || strings.HasPrefix(line, "acpterm: network: refused ")
		if strings.HasPrefix(line, "acpterm: ") && !live && at < reply {
			t.Errorf("before the reply: %q", line)
		}
		at += len(line)
	}
	t.Logf("the reply was on the screen %v before acpterm exited", r.elapsed-r.reply)
	if a.silent {
		return
	}
	out := strings.Index(r.out, m.Output)
	if out < 0 {
		t.Fatalf("the command's output %q is not shown", m.Output)
	}
	// Under its tool call: on a line of the tool block ("  │ "), after
	// the line that names the command.
	call := strings.Index(r.out, "printf")
	if call < 0 || call > out {
		t.Errorf("the command's output comes before its tool call")
	}
	lineStart := strings.LastIndexByte(r.out[:out], '\n') + 1
	if !strings.HasPrefix(r.out[lineStart:], "  │ ") {
		t.Errorf("the command's output is not in a tool block: %q", r.out[lineStart:out+len(m.Output)])
	}
}

// checkJSONScreen checks a --format json run: its events on stdout, the
// command's output in a terminal_output event of a terminal that its tool
// call shows, or in the tool call's own content.
func checkJSONScreen(t *testing.T, a scriptedAgent, m *modelServer, r result) {
	t.Helper()
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	for _, w := range shutdownWarnings {
		if strings.Contains(r.stderr, w) {
			t.Errorf("stderr: a warning about the agent's shutdown (%q) for a normal stop", w)
		}
	}
	evs := parseEvents(t, r.stdout)
	if stops := ofKind(evs, "stop"); len(stops) != 1 || stops[0].str("stopReason") != "end_turn" {
		t.Errorf("stop events %v, want one end_turn", stops)
	}
	if last := evs[len(evs)-1]; last.str("event") != "stop" {
		t.Errorf("the last event is %v, not the stop", last)
	}
	if !strings.Contains(r.stdout, m.Reply) {
		t.Errorf("no reply %q", m.Reply)
	}
	if a.silent {
		return
	}
	if where := jsonOutputPlace(evs, m.Output); where == "" {
		t.Errorf("the command's output %q is under no tool call", m.Output)
	} else {
		t.Logf("the command's output is in %s", where)
	}
}

// jsonOutputPlace says where in evs text is shown under a tool call: in
// the output of a terminal that a tool call shows ("terminal T of call
// C"), in a tool call's content ("content of call C"), or "" if neither.
// A tool call's rawOutput does not count: it is the agent's record, which
// a program reading the events would have to know each agent's shape of.
func jsonOutputPlace(evs []event, text string) string {
	callOf := map[string]string{} // terminal ID → tool call ID
	var inContent string
	for _, e := range evs {
		if e.str("event") != "session_update" {
			continue
		}
		u := e.update()
		call, _ := u["toolCallId"].(string)
		if call == "" {
			continue
		}
		for _, id := range terminalsOf(u) {
			callOf[id] = call
		}
		if content, err := json.Marshal(u["content"]); err == nil && inContent == "" && strings.Contains(string(content), text) {
			inContent = "content of call " + call
		}
	}
	for _, e := range evs {
		if e.str("event") == "terminal_output" && strings.Contains(e.str("data"), text) {
			if call, ok := callOf[e.str("terminalId")]; ok {
				return fmt.Sprintf("terminal %s of call %s", e.str("terminalId"), call)
			}
		}
	}
	return inContent
}

// terminalsOf are the terminal IDs a tool call update shows: its
// terminal content, and the display terminal of its _meta.
func terminalsOf(u map[string]any) []string {
	var ids []string
	content, _ := u["content"].([]any)
	for _, c := range content {
		if cm, ok := c.(map[string]any); ok && cm["type"] == "terminal" {
			if id, ok := cm["terminalId"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	meta, _ := u["_meta"].(map[string]any)
	for _, k := range []string{"terminal_info", "terminal_output", "terminal_exit"} {
		if v, ok := meta[k].(map[string]any); ok {
			if id, ok := v["terminal_id"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// agentCommand is the command acpterm runs for a named agent, as
// `acpterm agents` shows it.
func agentCommand(t *testing.T, acp, name string) []string {
	t.Helper()
	r := runBinary(t, acp, opts{env: []string{"PATH=" + installRealAgents(t) + string(os.PathListSeparator) + os.Getenv("PATH")}}, "agents")
	for line := range strings.Lines(r.stdout) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == name && f[1] == "installed" {
			return f[2:]
		}
	}
	t.Fatalf("acpterm agents has no installed %s:\n%s", name, r.stdout)
	return nil
}
