package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"go.uber.org/goleak"
)

// raceEnabled is set by race_test.go under -race.
var raceEnabled bool

// acptermBin is the binary under test, built once by TestMain, with the
// race detector when the tests have it.
var acptermBin string

// acptermPkg is the import path of the command under test.
const acptermPkg = "github.com/acpterm/acpterm/cmd/acpterm"

// agentExe, when set, is this package's test binary built without the race
// detector, which the tests run as their fake agents (see testExe).
var agentExe string

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	// Most of these tests wait on the processes they start.
	proctest.RaiseParallel(4 * runtime.GOMAXPROCS(0))
	dir, err := os.MkdirTemp("", "acpterm-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// acpterm keeps its session store in the user's state directory: the
	// runs under test keep theirs in the test's directory.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	// Shared builds (proctest.GoBuild): an unchanged acpterm is not linked
	// again, by this package's next run or by interop's.
	args := []string{"build", acptermPkg}
	if raceEnabled {
		args = []string{"build", "-race", acptermPkg}
	}
	if acptermBin, err = proctest.GoBuild(dir, "acpterm", args...); err != nil {
		fmt.Fprintf(os.Stderr, "building acpterm: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if raceEnabled {
		// The fake agents are test code, and every run starts one: built
		// with the race detector, each costs 50 ms more CPU to start,
		// and much more to move data.
		if agentExe, err = proctest.GoBuild(dir, "agent.test", "test", "-c", acptermPkg); err != nil {
			fmt.Fprintf(os.Stderr, "building the fake agents: %v\n", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// Race-enabled binaries otherwise sleep a second before exiting.
	os.Setenv("GORACE", "atexit_sleep_ms=0 halt_on_error=1")
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is one finished acpterm run.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
	ended          time.Time // when acpterm had exited
}

// opts tune an acpterm run.
type opts struct {
	env   []string
	stdin string
	dir   string
	bound time.Duration // the run is killed, and the test failed, past it; 0 means 60 s
	// plain runs the binary built without the race detector (see
	// plainAcpterm): for the tests of flags, output and the order of a
	// session's steps, which make many runs each, where the race-built
	// binary only costs CPU. The tests of signals, terminals, the TTY and
	// hostile agents keep it.
	plain bool
	// dropStdout sends stdout to /dev/null, for runs that print tens of
	// MiB the test does not look at: copying them into the race-built
	// test binary costs more than the run.
	dropStdout bool
}

// testExe is the program the tests run as a fake agent (or as a helper
// command of this package): this test binary, or the same code built
// without the race detector when this one has it.
func testExe(t *testing.T) string {
	t.Helper()
	if agentExe != "" {
		return agentExe
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// acpterm runs the binary to the end (bounded, so that a hang fails).
func acpterm(t *testing.T, o opts, args ...string) result {
	t.Helper()
	if o.plain {
		return runBinary(t, plainAcpterm(t), o, args...)
	}
	return runBinary(t, acptermBin, o, args...)
}

// runBinary runs an acpterm binary to the end, bounded, and checks that it
// left no race report and no cgroup behind.
func runBinary(t testing.TB, bin string, o opts, args ...string) result {
	t.Helper()
	bound := o.bound
	if bound == 0 {
		bound = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), o.env...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.dropStdout {
		cmd.Stdout = nil
	}
	start := time.Now()
	err := cmd.Run()
	ended := time.Now()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: ended.Sub(start), ended: ended}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %q was still running after %v (killed)\nstdout:\n%.3000s\nstderr:\n%.3000s", filepath.Base(bin), args, bound, r.stdout, r.stderr)
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %q: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", filepath.Base(bin), args, err, r.stdout, r.stderr)
	}
	checkNoRace(t, r.stderr)
	assertNoCgroups(t, cmd.Process.Pid)
	return r
}

func checkNoRace(t testing.TB, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "DATA RACE") {
		t.Fatalf("the race detector fired:\n%s", stderr)
	}
}

// event is one JSON event of --format json.
type event map[string]any

func (e event) str(k string) string { s, _ := e[k].(string); return s }

func (e event) update() map[string]any { u, _ := e["update"].(map[string]any); return u }

func parseEvents(t *testing.T, stdout string) []event {
	t.Helper()
	var evs []event
	for _, line := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.str("event") == "" {
			t.Fatalf("stdout line is not a JSON event: %q (%v)", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func ofKind(evs []event, kind string) []event {
	var out []event
	for _, e := range evs {
		if e.str("event") == kind {
			out = append(out, e)
		}
	}
	return out
}

func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
	if t.Failed() {
		t.Fatalf("%s:\n%s", what, s)
	}
}

func TestRunText(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{}, "run", "--approve-all", "-p", "echo hello\nfalse\necho never", "--", acptermBin, "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout,
		"✓ echo hello [execute]\n  │ hello\n  └ exit 0 · ",
		"✗ false [execute]\n  └ exit 1 · ",
		"ok   echo hello: exit 0\nFAIL false: exit 1\n2 of 3 commands ran, 1 failed, 1 not run.",
	)
	if strings.Count(r.stdout, "hello\n") != 1 || strings.Contains(r.stdout, "```") {
		t.Errorf("output printed twice:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("escape sequences without a TTY: %q", r.stdout)
	}
	if strings.Contains(r.stdout, "never") && !strings.Contains(r.stdout, "echo never") {
		t.Fatal("the line after the failure ran")
	}
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{}, "run", "--format", "json", "--approve-all", "-p", "echo hello; echo err >&2\nexit 4",
		"--", acptermBin, "agent", "--keep-going")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	created := ofKind(evs, "terminal_created")
	if len(created) != 2 {
		t.Fatalf("%d terminal_created events:\n%s", len(created), r.stdout)
	}
	first := created[0]
	if first.str("command") != "sh" || fmt.Sprint(first["args"]) != "[-c echo hello; echo err >&2]" || first.str("cwd") == "" || first["pid"] == nil {
		t.Fatalf("terminal_created %v", first)
	}
	tid := first.str("terminalId")
	var out strings.Builder
	for _, e := range ofKind(evs, "terminal_output") {
		if e.str("terminalId") == tid {
			out.WriteString(e.str("data"))
		}
	}
	if out.String() != "hello\nerr\n" {
		t.Fatalf("terminal_output of %s: %q", tid, out.String())
	}
	exits := ofKind(evs, "terminal_exit")
	if len(exits) != 2 || exits[0]["exitCode"] != 0.0 || exits[1]["exitCode"] != 4.0 || exits[0]["signal"] != nil || exits[0]["timedOut"] != false {
		t.Fatalf("terminal_exit events %v", exits)
	}
	checkRunJSONToolCalls(t, evs, tid, r.stdout)
	if perms := ofKind(evs, "permission"); len(perms) != 2 || perms[0].str("decision") != "allow_once" || perms[0].str("terminalCommand") == "" {
		t.Fatalf("permission events %v", perms)
	}
	if last := evs[len(evs)-1]; last.str("event") != "stop" || last.str("stopReason") != "end_turn" {
		t.Fatalf("last event %v", last)
	}
}

// checkRunJSONToolCalls: the tool call embeds the terminal tid; its
// updates say how it went, and the final ones carry the output and exit
// status as text, after the terminal, for clients that show no terminal.
func checkRunJSONToolCalls(t *testing.T, evs []event, tid, stdout string) {
	t.Helper()
	var embedded bool
	statuses := map[string]string{}
	var texts []string
	for _, e := range ofKind(evs, "session_update") {
		u := e.update()
		switch u["sessionUpdate"] {
		case "tool_call":
			content, _ := u["content"].([]any)
			for _, c := range content {
				if m, _ := c.(map[string]any); m["type"] == "terminal" && m["terminalId"] == tid && u["kind"] == "execute" {
					embedded = true
				}
			}
		case "tool_call_update":
			statuses[u["toolCallId"].(string)] = u["status"].(string)
			content, _ := u["content"].([]any)
			if len(content) != 2 {
				t.Fatalf("final tool_call_update content %v, want terminal and text", content)
			}
			first, _ := content[0].(map[string]any)
			text, _ := content[1].(map[string]any)["content"].(map[string]any)
			if first["type"] != "terminal" || text["type"] != "text" {
				t.Fatalf("final tool_call_update content %v, want terminal then text", content)
			}
			texts = append(texts, text["text"].(string))
		}
	}
	if !embedded {
		t.Fatalf("no tool_call embeds %s:\n%s", tid, stdout)
	}
	if want := []string{"```\nhello\nerr\n```\nexit 0", "(no output)\nexit 4"}; fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Fatalf("tool call texts %q, want %q", texts, want)
	}
	var got []string
	for _, s := range statuses {
		got = append(got, s)
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, " "), "completed") || !strings.Contains(strings.Join(got, " "), "failed") {
		t.Fatalf("tool call statuses %v", statuses)
	}
}

func TestPromptFromStdin(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{stdin: "echo from-stdin\n"}, "run", "--approve-all", "--", acptermBin, "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "  │ from-stdin\n")
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo is paced for people to watch (6 s)")
	}
	t.Parallel()
	r := acpterm(t, opts{plain: true}, "demo")
	if r.code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "demo output", r.stdout,
		"  │ hello from acpterm\n",
		"  │ tick 1\n", "  │ tick 5\n",
		"✗ echo failing >&2; exit 3 [execute]\n  │ failing\n  └ exit 3",
		"lines above", "output truncated: the agent saw only the last 4 KiB",
		"✗ sleep 30 [execute]\n  └ timed out, killed by SIGTERM",
		"ok   seq 1 200000: exit 0, output truncated\n",
		// acpterm's --timeout killed it, not the agent's: the agent saw
		// a signal.
		"FAIL sleep 30: killed by SIGTERM\n",
		"5 of 5 commands ran, 2 failed.",
	)
	// The tool calls' text copies of the output are not printed: each
	// terminal's own tail is.
	if strings.Contains(r.stdout, "```") || strings.Count(r.stdout, "│ hello from acpterm\n") != 1 {
		t.Errorf("output printed twice:\n%s", r.stdout)
	}
	if r.elapsed > 15*time.Second {
		t.Errorf("the demo took %v", r.elapsed)
	}
}

func TestPermissionFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		flags    []string
		decision string
		reason   string
		ran      bool
		noTTY    bool
	}{
		{"default without a TTY", nil, "reject_once", "no TTY to ask on", false, true},
		{"deny-all", []string{"--deny-all"}, "reject_once", "--deny-all", false, false},
		{"approve-all", []string{"--approve-all"}, "allow_once", "--approve-all", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--format", "json"}, tt.flags...), "-p", "echo ran", "--", plainAcpterm(t), "agent")
			r := acpterm(t, opts{plain: true}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			evs := parseEvents(t, r.stdout)
			perms := ofKind(evs, "permission")
			if len(perms) != 1 || perms[0].str("decision") != tt.decision || perms[0].str("reason") != tt.reason || perms[0].str("terminalCommand") != "sh -c 'echo ran'" {
				t.Fatalf("permission events %v", perms)
			}
			if ran := len(ofKind(evs, "terminal_created")) == 1; ran != tt.ran {
				t.Fatalf("command ran: %v, want %v", ran, tt.ran)
			}
			if got := strings.Count(r.stderr, "no TTY to ask on"); (got == 1) != tt.noTTY || got > 1 {
				t.Fatalf("stderr (%d no-TTY lines):\n%s", got, r.stderr)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{}, "run", "-p", "echo ran", "--", acptermBin, "agent")
		mustContain(t, "stdout", r.stdout, "✗ permission denied: run sh -c 'echo ran' (no TTY to ask on)")
		mustContain(t, "stderr", r.stderr, `acpterm: denied the command "sh -c 'echo ran'": no TTY to ask on`)
	})
}

func TestUsageAndHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{nil, "", 2, "", "Usage:"},
		{[]string{"frobnicate"}, "", 2, "", `unknown command "frobnicate"`},
		{[]string{"run", "-p", "hi"}, "", 2, "", "no agent given"},
		{[]string{"run", "--", "agent"}, "", 2, "", "prompt is empty"},
		{[]string{"run", "--approve-all", "--deny-all", "-p", "x", "--", "a"}, "", 2, "", "exclude each other"},
		{[]string{"run", "--format", "xml", "-p", "x", "--", "a"}, "", 2, "", "--format must be text or json"},
		{[]string{"run", "--output-limit", "lots", "-p", "x", "--", "a"}, "", 2, "", "invalid size"},
		{[]string{"run", "--bogus"}, "", 2, "", "flag provided but not defined"},
		{[]string{"run", "--cancel-grace", "0s", "-p", "x", "--", "a"}, "", 2, "", "--cancel-grace must be positive"},
		{[]string{"run", "-h"}, "", 0, "", "--approve-all"},
		{[]string{"agent", "extra"}, "", 2, "", "unexpected arguments"},
		{[]string{"help"}, "", 0, "Exit status", ""},
		{[]string{"help", "run"}, "", 0, "124 --turn-timeout, 130", ""},
		{[]string{"help", "agent"}, "", 0, `"type": "custom"`, ""},
		{[]string{"help", "demo"}, "", 0, "seq 1 200000", ""},
		{[]string{"help", "nope"}, "", 2, "", "unknown command"},
		{[]string{"version"}, "", 0, "acpterm ", ""},
		{[]string{"probe", "extra"}, "", 2, "", "unexpected arguments"},
		{[]string{"probe", "--list"}, "", 0, "wait-ignores-grandchild", ""},
		{[]string{"help", "probe"}, "", 0, "acpterm-probe", ""},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("acpterm %q: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)",
				tt.args, code, tt.code, stdout.String(), tt.stdout, stderr.String(), tt.stderr)
		}
	}
	// The exit codes in the help are the ones the program uses.
	var help bytes.Buffer
	run(context.Background(), []string{"help", "run"}, nil, &help, io.Discard)
	mustContain(t, "run help", help.String(), client.ExitSummary())
	help.Reset()
	run(context.Background(), []string{"help", "agent"}, nil, &help, io.Discard)
	mustContain(t, "agent help", help.String(), `"agent_servers"`, `"command": "acpterm"`, `"args": ["agent"]`)
}

// lineStream reads a child's output line by line as it comes.
type lineStream struct {
	lines chan string
	mu    sync.Mutex
	all   strings.Builder
}
