//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/expect"
	"github.com/creack/pty"
)

// ptyScreen collects what the program under test writes to its terminal.
type ptyScreen struct{ *expect.Buffer }

func (s *ptyScreen) expect(t *testing.T, want string) {
	t.Helper()
	s.Expect(t, want, 30*time.Second)
}

// send types in at the terminal, then waits for each of wants in turn.
func (s *ptyScreen) send(t *testing.T, tty *os.File, in string, wants ...string) {
	t.Helper()
	if _, err := tty.WriteString(in); err != nil {
		t.Fatalf("typing %q: %v", in, err)
	}
	for _, w := range wants {
		s.expect(t, w)
	}
}

// mustShow checks that the terminal showed each of wants, and shows it
// all, quoted, when it did not.
func mustShow(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("terminal lacks %q", w)
		}
	}
	if t.Failed() {
		t.Fatalf("terminal output:\n%q", out)
	}
}

// runPTY runs acpterm with stdin, stdout and stderr on a pseudo-terminal
// (its controlling terminal), lets interact type at it, and returns all
// it wrote with the exit status.
func runPTY(t *testing.T, env []string, interact func(*ptyScreen, *os.File), args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, acptermBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NO_COLOR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{"TERM=xterm"}, env...)...)
	cmd.Dir = t.TempDir()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	screen := &ptyScreen{expect.NewBuffer()}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				return // EIO once the last holder of the terminal is gone
			}
		}
	}()
	if interact != nil {
		interact(screen, ptmx)
	}
	err = cmd.Wait()
	<-copied
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	out := screen.String()
	checkNoRace(t, out)
	assertNoCgroups(t, cmd.Process.Pid)
	return out, code
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

const ticks = "for i in 1 2 3; do echo tick $i; sleep 0.3; done"

func TestTTYLive(t *testing.T) {
	t.Parallel()
	out, code := runPTY(t, nil, nil, "run", "--approve-all", "-p", ticks, "--", acptermBin, "agent")
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	final := strings.Index(out, "\x1b[32m✓\x1b[0m \x1b[1m"+ticks)
	if final < 0 {
		t.Fatalf("no coloured final block:\n%q", out)
	}
	live := out[:final]
	// Before the final block: the running command, its elapsed time
	// redrawn in place, and its output as it comes.
	for _, re := range []string{
		`\x1b\[[0-9]+A\r\x1b\[J`,         // the live region redrawn in place
		`\d+\.\ds`,                       // elapsed time
		`\x1b\[2m  │ \x1b\[0mtick 1\r\n`, // live output
	} {
		if !regexp.MustCompile(re).MatchString(live) {
			t.Errorf("the live phase lacks %q", re)
		}
	}
	if !strings.Contains(out[final:], "tick 3") {
		t.Errorf("the final block lacks the output")
	}
	if t.Failed() {
		t.Fatalf("terminal output:\n%q", out)
	}
}

func TestTTYNoColor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		env   []string
		flags []string
	}{
		{"NO_COLOR", []string{"NO_COLOR=1"}, nil},
		{"--no-color", nil, []string{"--no-color"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--approve-all"}, tt.flags...), "-p", "echo plain", "--", acptermBin, "agent")
			out, code := runPTY(t, tt.env, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d:\n%q", code, out)
			}
			if m := sgr.FindString(out); m != "" {
				t.Fatalf("colour %q despite %s:\n%q", m, tt.name, out)
			}
			if !strings.Contains(out, "✓ echo plain [execute]\r\n  │ plain\r\n") {
				t.Fatalf("output:\n%q", out)
			}
		})
	}
	// An empty NO_COLOR does not count (no-color.org).
	out, _ := runPTY(t, []string{"NO_COLOR="}, nil, "run", "--approve-all", "-p", "echo x", "--", acptermBin, "agent")
	if !sgr.MatchString(out) {
		t.Fatalf("no colour with an empty NO_COLOR:\n%q", out)
	}
}

// TestTTYAsk: without --approve-all, acpterm asks on the terminal, and
// one key answers (no Enter), echoed as the word it stands for.
func TestTTYAsk(t *testing.T) {
	t.Parallel()
	out, code := runPTY(t, nil, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "the agent wants to run: sh -c 'echo first'")
		s.expect(t, "allow? [y]es, [n]o, [a]lways")
		s.send(t, tty, "y", "rest of this run): yes\r\n", "the agent wants to run: sh -c 'echo second'", "allow?")
		s.send(t, tty, "n", "rest of this run): no\r\n")
	}, "run", "-p", "echo first\necho second", "--", acptermBin, "agent")
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	mustShow(t, out, "  │ \x1b[0mfirst", "permission denied: \x1b[0mrun sh -c 'echo second'")
}

// TestTTYAskCtrlC: the question holds the terminal in raw mode, where
// Ctrl-C is a key, not a signal: it denies and interrupts the turn as
// Ctrl-C does at any other time.
func TestTTYAskCtrlC(t *testing.T) {
	t.Parallel()
	out, code := runPTY(t, nil, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "the agent wants to run: sh -c 'echo first'")
		s.expect(t, "allow?")
		s.send(t, tty, "\x03", "^C: no, and the turn is interrupted\r\n", "cancelling the turn")
	}, "run", "-p", "echo first\necho second", "--", acptermBin, "agent")
	if code != 130 {
		t.Fatalf("exit %d, want 130 (cancelled):\n%q", code, out)
	}
	mustShow(t, out, "permission denied: \x1b[0mrun sh -c 'echo first'", "turn cancelled")
	if strings.Contains(out, "echo second'") {
		t.Errorf("the turn went on after Ctrl-C")
	}
	if t.Failed() {
		t.Fatalf("terminal output:\n%q", out)
	}
}

// Started by hand at a terminal, the agent and the probe say what they are
// for, and Ctrl-D ends them cleanly.
func TestTTYAgentSideHint(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"agent", "probe"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			out, code := runPTY(t, nil, func(s *ptyScreen, tty *os.File) {
				s.expect(t, "serving ACP (JSON-RPC) on stdin and stdout")
				s.expect(t, "To watch it work instead: ")
				tty.WriteString("\x04") // Ctrl-D: end of input
			}, cmd)
			if code != 0 {
				t.Fatalf("exit %d:\n%q", code, out)
			}
		})
	}
}
