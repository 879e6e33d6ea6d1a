package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// exitBound bounds acpterm's exit after a turn ends. docs/sandbox.md
// ("Bounded exit") promises --kill-grace (2 s by default) plus 5.75 s;
// this test allows the looser 7.5 s.
const exitBound = 2*time.Second + 7500*time.Millisecond

// An agent that exits mid-turn while the child it started holds its
// stdout open (so that its stdout never ends): acpterm ends the turn with
// exit 3 and a message that says the agent exited and how, within the
// bound, and the child is gone with it. Before acpterm watched the agent's
// process, the run waited for the child, here 1000 s.
func TestAgentExitsWithChildHoldingStdout(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			r := acpterm(t, opts{env: []string{fakeAgentEnv + "=exit-orphan"}, bound: 30 * time.Second},
				"run", "--format", format, "-p", "hi", "--", testExe(t))
			m := regexp.MustCompile(`fake agent: sleep pid (\d+)`).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("the agent did not start its child:\n%s", r.stderr)
			}
			pid, _ := strconv.Atoi(m[1])
			// Gone at once: acpterm killed it before exiting (a zombie,
			// which this machine's PID 1 may never reap, counts as gone).
			if err := proctest.WaitExit([]int{pid}, time.Second); err != nil {
				t.Errorf("the agent's child outlived acpterm: %v", err)
			}
			if r.code != 3 {
				t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, "acpterm: the agent exited during the turn (exit status 9)\n")
			// The bound is on the time from the agent's exit to acpterm's,
			// not on the agent's start, which a loaded machine can make
			// slow.
			e := regexp.MustCompile(`fake agent: exiting at (\d+)`).FindStringSubmatch(r.stderr)
			if e == nil {
				t.Fatalf("the agent did not say when it exited:\n%s", r.stderr)
			}
			nanos, _ := strconv.ParseInt(e[1], 10, 64)
			if after := r.ended.Sub(time.Unix(0, nanos)); after > exitBound {
				t.Fatalf("acpterm exited %v after the agent, more than the documented bound of %v", after, exitBound)
			} else {
				t.Logf("acpterm exited %v after the agent, %v after it started", after, r.elapsed)
			}
			if format == "json" {
				evs := parseEvents(t, r.stdout)
				last := evs[len(evs)-1]
				if last.str("event") != "error" || last["exitCode"] != 3.0 || !strings.Contains(last.str("message"), "exit status 9") {
					t.Fatalf("last event %v", last)
				}
			}
		})
	}
}

// runMerged runs acpterm with its stdout and stderr on one pipe, so that
// the output shows the order in which acpterm wrote to either.
func runMerged(t *testing.T, env []string, args ...string) (string, int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, acptermBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: os/exec shares it
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("acpterm %q still running after 60 s:\n%s", args, out.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	checkNoRace(t, out.String())
	assertNoCgroups(t, cmd.Process.Pid)
	return out.String(), code, took
}

// An agent that does not exit when its stdin closes, and exits on SIGTERM,
// as codex and claude do: the reply, the usage line and the stop are shown
// before acpterm shuts the agent down (before the agent sees SIGTERM, in
// the output acpterm writes), and stopping it so is no cause for a
// warning.
func TestAgentLingersTurnEndFirst(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=linger-term"}
	const sigterm = "fake agent: SIGTERM, exiting"
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		out, code, _ := runMerged(t, env, "run", "-p", "hi", "--", testExe(t))
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		reply, usage, term := strings.Index(out, lingerReply), strings.Index(out, "context: 1,234 / 200,000 tokens"), strings.Index(out, sigterm)
		if reply < 0 || usage < 0 || term < 0 {
			t.Fatalf("reply at %d, usage line at %d, the agent's SIGTERM line at %d:\n%s", reply, usage, term, out)
		}
		if reply > term || usage > term {
			t.Fatalf("the end of the turn came after the agent was signalled:\n%s", out)
		}
		if strings.Contains(out, "signalled") || strings.Contains(out, "SIGKILL") {
			t.Fatalf("a normal stop on SIGTERM was warned about:\n%s", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		out, code, _ := runMerged(t, env, "run", "--format", "json", "-p", "hi", "--", testExe(t))
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		stop, term := strings.Index(out, `{"event":"stop","stopReason":"end_turn"}`), strings.Index(out, sigterm)
		if stop < 0 || term < 0 || stop > term {
			t.Fatalf("stop event at %d, the agent's SIGTERM line at %d:\n%s", stop, term, out)
		}
		var stdout strings.Builder
		for _, l := range strings.SplitAfter(out, "\n") {
			if strings.HasPrefix(l, "{") {
				stdout.WriteString(l)
			}
		}
		evs := parseEvents(t, stdout.String())
		if last := evs[len(evs)-1]; last.str("event") != "stop" {
			t.Fatalf("last event %v", last)
		}
		if strings.Contains(out, "signalled") || strings.Contains(out, "SIGKILL") {
			t.Fatalf("a normal stop on SIGTERM was warned about:\n%s", out)
		}
	})
}

// An agent that ignores SIGTERM as well: the one warning says SIGKILL was
// needed, after the turn's end.
func TestAgentIgnoresSIGTERMWarned(t *testing.T) {
	t.Parallel()
	out, code, _ := runMerged(t, []string{fakeAgentEnv + "=ignore-term"}, "run", "-p", "hi", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	warn := regexp.MustCompile(`(?m)^acpterm: .*did not exit within 250ms of its stdin closing nor 2s of SIGTERM; it was killed \(SIGKILL\)$`).FindStringIndex(out)
	if warn == nil {
		t.Fatalf("no warning about SIGKILL:\n%s", out)
	}
	reply := strings.Index(out, lingerReply)
	if reply < 0 || reply > warn[0] {
		t.Fatalf("the reply is missing or follows the warning:\n%s", out)
	}
	if n := strings.Count(out[reply:], "acpterm: "); n != 1 {
		t.Fatalf("%d lines from acpterm after the reply, want the one warning:\n%s", n, out)
	}
}
