package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func streamLines(r io.Reader) *lineStream {
	s := &lineStream{lines: make(chan string, 1024)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.all.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			s.lines <- sc.Text()
		}
	}()
	return s
}

// waitFor returns the first line containing sub.
func (s *lineStream) waitFor(t *testing.T, sub string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("output ended without %q", sub)
			}
			if strings.Contains(l, sub) {
				return l
			}
		case <-timeout:
			t.Fatalf("no %q within 30s", sub)
		}
	}
}

// drain reads the rest and returns everything read.
func (s *lineStream) drain() string {
	for range s.lines {
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.String()
}

// finish waits for acpterm to exit, checks the race detector said nothing
// and the exit status is want, and returns all it wrote.
func (s *started) finish(t *testing.T, want int) (stdout, stderr string) {
	t.Helper()
	code := s.wait()
	stdout, stderr = s.stdout.drain(), s.stderr.drain()
	checkNoRace(t, stderr)
	assertNoCgroups(t, s.cmd.Process.Pid)
	if code != want {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, want, stdout, stderr)
	}
	return stdout, stderr
}

// started is a running acpterm with its output streamed.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *lineStream
	start          time.Time
}

func startAcpterm(t *testing.T, env []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(acptermBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, stdout: streamLines(outR), stderr: streamLines(errR), start: time.Now()}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = s.wait()
		}
	})
	return s
}

// wait drains the output and reaps the process; it returns the exit code.
func (s *started) wait() int {
	s.stdout.drain()
	s.stderr.drain()
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// pidOf returns the pid of a terminal_created JSON line.
func pidOf(t *testing.T, line string) int {
	t.Helper()
	var ev struct{ PID int }
	if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.PID <= 0 {
		t.Fatalf("terminal_created without a pid: %q", line)
	}
	return ev.PID
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	s := startAcpterm(t, nil, "run", "--format", "json", "--approve-all", "-p", "sleep 30", "--", acptermBin, "agent")
	pid := pidOf(t, s.stdout.waitFor(t, `"event":"terminal_created"`))
	if len(liveInGroup(t, pid)) == 0 {
		t.Fatalf("terminal %d is not running", pid)
	}
	// Timed from the interrupt, not the start, which a loaded machine
	// can make slow: the command sleeps 30 s, and the run must not.
	interrupted := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := s.finish(t, 130)
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; last.str("event") != "stop" || last.str("stopReason") != "cancelled" {
		t.Fatalf("last event %v", last)
	}
	mustContain(t, "stderr", stderr, "cancelling the turn")
	assertGone(t, pid)
	if d := time.Since(interrupted); d > 20*time.Second {
		t.Fatalf("ended %v after the interrupt", d)
	}
}

func TestSecondInterruptKills(t *testing.T) {
	t.Parallel()
	s := startAcpterm(t, []string{fakeAgentEnv + "=stubborn"}, "run", "--format", "json", "--approve-all", "-p", "hi", "--", testExe(t))
	pid := pidOf(t, s.stdout.waitFor(t, `"event":"terminal_created"`))
	s.stdout.waitFor(t, `"call_sleep"`)
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	s.stderr.waitFor(t, "cancelling the turn")
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := s.finish(t, 130)
	mustContain(t, "stderr", stderr, "killing the agent")
	evs := parseEvents(t, stdout)
	if last := evs[len(evs)-1]; last.str("event") != "stop" || last.str("stopReason") != "cancelled" {
		t.Fatalf("last event %v", last)
	}
	assertGone(t, pid)
}

func TestAgentCrash(t *testing.T) {
	t.Parallel()
	s := startAcpterm(t, []string{fakeAgentEnv + "=crash"}, "run", "--format", "json", "--approve-all", "-p", "hi", "--", testExe(t))
	pid := pidOf(t, s.stdout.waitFor(t, `"event":"terminal_created"`))
	// Timed from the terminal's start, not the run's, which a loaded
	// machine can make slow: its command sleeps 30 s, and the run must
	// end with the agent's crash instead.
	created := time.Now()
	stdout, stderr := s.finish(t, 3)
	mustContain(t, "stderr", stderr, "fake agent: crashing now", "acpterm: the agent exited during the turn (exit status 7)\n")
	evs := parseEvents(t, stdout)
	last := evs[len(evs)-1]
	if last.str("event") != "error" || last["exitCode"] != 3.0 || !strings.Contains(last.str("message"), "exit status 7") {
		t.Fatalf("last event %v", last)
	}
	if exits := ofKind(evs, "terminal_exit"); len(exits) != 1 || exits[0].str("signal") == "" {
		t.Fatalf("the terminal was not killed: %v", exits)
	}
	assertGone(t, pid)
	if d := time.Since(created); d > 15*time.Second {
		t.Fatalf("ended %v after the terminal started", d)
	}
}

func TestMisbehavingAgents(t *testing.T) {
	t.Parallel()
	// Only the silent agent waits for --init-timeout; the others end the
	// run by themselves, and a short timeout would race the start-up of
	// the (race-built) agent on a loaded machine.
	tests := []struct {
		mode        string
		initTimeout string
		want        string
	}{
		{"garbage", "20s", "acpterm: protocol error: the agent wrote something other than ACP JSON-RPC to its stdout (parse error: invalid character 'H' looking for beginning of value)"},
		{"exit", "20s", "acpterm: the agent exited before answering initialize (exit status 5)"},
		{"silent", "500ms", "acpterm: the agent did not answer initialize within 500ms (see --init-timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			for _, format := range []string{"text", "json"} {
				r := acpterm(t, opts{env: []string{fakeAgentEnv + "=" + tt.mode}},
					"run", "--format", format, "--init-timeout", tt.initTimeout, "-p", "hi", "--", testExe(t))
				if r.code != 3 {
					t.Fatalf("%s: exit %d, want 3\n%s\n%s", format, r.code, r.stdout, r.stderr)
				}
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				if last := lines[len(lines)-1]; last != tt.want {
					t.Fatalf("%s: last stderr line\n  %q\nwant\n  %q", format, last, tt.want)
				}
				if strings.Count(r.stderr, "acpterm:") != 1 {
					t.Fatalf("%s: more than one error line:\n%s", format, r.stderr)
				}
				if r.elapsed > 15*time.Second {
					t.Fatalf("%s: took %v", format, r.elapsed)
				}
				switch format {
				case "json":
					evs := parseEvents(t, r.stdout)
					if len(evs) != 1 || evs[0].str("event") != "error" || evs[0]["exitCode"] != 3.0 {
						t.Fatalf("json events %v", evs)
					}
				case "text":
					if r.stdout != "" {
						t.Fatalf("stdout %q", r.stdout)
					}
				}
			}
		})
	}
	t.Run("no such agent", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{}, "run", "-p", "hi", "--", "/nonexistent/agent")
		if r.code != 3 || r.stderr != "acpterm: cannot start the agent /nonexistent/agent: no such file or directory\n" {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// An agent that runs a command itself and streams it through the
// _meta.terminal_output display extension: acpterm offers the extension
// and shows that terminal like its own, in both formats.
func TestDisplayTerminals(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=display"}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		s := startAcpterm(t, env, "run", "--format", "json", "-p", "hi", "--", testExe(t))
		stdout, _ := s.finish(t, 0)
		evs := parseEvents(t, stdout)
		created := ofKind(evs, "terminal_created")
		if len(created) != 1 || created[0].str("terminalId") != "agent-term-1" || created[0]["display"] != true ||
			created[0].str("command") != "make test" || created[0].str("cwd") != "/work" || created[0]["pid"] != nil {
			t.Fatalf("terminal_created events %v", created)
		}
		var out strings.Builder
		for _, e := range ofKind(evs, "terminal_output") {
			out.WriteString(e.str("data"))
		}
		if out.String() != "building…\nok 3 tests\n" {
			t.Fatalf("terminal output %q", out.String())
		}
		exits := ofKind(evs, "terminal_exit")
		if len(exits) != 1 || exits[0]["exitCode"] != 0.0 || exits[0]["signal"] != nil {
			t.Fatalf("terminal_exit events %v", exits)
		}
	})
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		s := startAcpterm(t, env, "run", "-p", "hi", "--", testExe(t))
		stdout, _ := s.finish(t, 0)
		mustContain(t, "stdout", stdout, "✓ make test [execute]", "  │ building…\n", "  │ ok 3 tests\n", "  └ exit 0")
		if strings.Contains(stdout, "truncated") {
			t.Fatalf("a display terminal reported as truncated:\n%s", stdout)
		}
	})
}
