package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// The tests of the faults of a --remote run: a connection lost
// mid-command, a second Ctrl-C.

// childOf waits for the child of pid whose command name is comm and
// returns its PID.
func childOf(t *testing.T, pid int, comm string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
			if open < 0 || close < open {
				continue
			}
			f := strings.Fields(string(b[close+1:]))
			if string(b[open+1:close]) == comm && len(f) > 1 && f[1] == strconv.Itoa(pid) {
				child, _ := strconv.Atoi(e.Name())
				return child
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no child %s of %d", comm, pid)
	return 0
}

// startRemote starts acpterm run with args, its stdout and stderr kept,
// and waits until want processes marked with mark run on the target. The
// returned channel has its Wait's result.
func startRemote(t *testing.T, mark string, want int, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *watched, chan error) {
	t.Helper()
	return startRemoteAs(t, nil, mark, want, env, args...)
}

// startRemoteAs is startRemote with the process attributes attr (nil:
// none), for a run in a process group of its own, as a shell runs it in
// a terminal.
func startRemoteAs(t *testing.T, attr *syscall.SysProcAttr, mark string, want int, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *watched, chan error) {
	t.Helper()
	cmd := exec.Command(acptermBin, args...)
	cmd.SysProcAttr = attr
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	stderr := &watched{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for len(sshtest.Running(remoteMarkVar, mark)) < want {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the command did not start on the target within 30 s\nstderr:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, &stdout, stderr, done
}

// watched is a process's output, kept, that tells when a text shows in
// it (saw).
type watched struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits []watch
}

type watch struct {
	text string
	seen chan struct{}
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.check()
	return len(p), nil
}

// check closes the channels of the texts that have shown. w.mu is held.
func (w *watched) check() {
	keep := w.waits[:0]
	for _, x := range w.waits {
		if strings.Contains(w.buf.String(), x.text) {
			close(x.seen)
		} else {
			keep = append(keep, x)
		}
	}
	w.waits = keep
}

// saw is closed once text has shown.
func (w *watched) saw(text string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := watch{text, make(chan struct{})}
	w.waits = append(w.waits, x)
	w.check()
	return x.seen
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitEnd waits for acpterm to end, within bound, and checks it left no
// race report.
func waitEnd(t *testing.T, cmd *exec.Cmd, done chan error, stderr fmt.Stringer, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-done:
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("acpterm still running %v on\nstderr:\n%s", bound, stderr)
	}
	checkNoRace(t, stderr.String())
	return time.Since(start)
}

// TestRemoteSSHConnectionLost: when the ssh transport dies mid-command,
// the terminal it cut off ends on the display, failed, saying that the
// connection to the target was lost and the target killed the command
// (in text and in JSON, never "still running"), and the agent's pending
// wait_for_exit fails at once instead of hanging.
func TestRemoteSSHConnectionLost(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	why := "the connection to ssh://" + sshtest.Host + " was lost and the target killed the command"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			mark := newMark(t)
			args := append([]string{"run", "--approve-all", "--format", format}, remoteArgs(t, s, targetDir(t))...)
			args = append(args, "-p", remoteMarkVar+"="+mark+" sleep 1081", "--", testExe(t))
			cmd, stdout, stderr, done := startRemote(t, mark, 1, []string{fakeAgentEnv + "=remote-term"}, args...)
			// Cut only once the create is answered: the command runs on
			// the target a moment before that.
			select {
			case <-stderr.saw("fake agent: terminal created"):
			case <-time.After(30 * time.Second):
				t.Fatalf("the terminal's create was not answered within 30 s\nstderr:\n%s", stderr)
			}
			ssh := childOf(t, cmd.Process.Pid, "ssh")
			if err := syscall.Kill(ssh, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			took := waitEnd(t, cmd, done, stderr, 10*time.Second)
			t.Logf("acpterm ended %v after kill -9 of ssh", took.Round(time.Millisecond))
			if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
				t.Errorf("2 s after the transport died, still running on the target: %v", left)
			}
			out := stdout.String()
			if strings.Contains(out, "still running") {
				t.Errorf("a terminal still reads as running:\n%s", out)
			}
			mustContain(t, "stderr", stderr.String(), "acpterm: ssh://"+sshtest.Host)
			switch format {
			case "text":
				mustContain(t, "stdout", out, "$ "+remoteMarkVar+"="+mark+" sleep 1081\n", "\n  └ "+why+" · ",
					"wait: "+why+": remote: the connection to the exec server was lost")
			case "json":
				evs := parseEvents(t, out)
				exits := ofKind(evs, "terminal_exit")
				if len(exits) != 1 || exits[0].str("lost") != why || exits[0]["exitCode"] != nil || exits[0]["signal"] != nil {
					t.Errorf("terminal_exit events %v, want one lost %q", exits, why)
				}
				mustContain(t, "stdout", out, "wait: "+why)
			}
		})
	}
}

// TestRemoteSSHSecondInterrupt: the second Ctrl-C kills the commands on
// the target at once, as it does here: SIGKILL of their process groups,
// not terminal/kill's SIGTERM and kill grace, which a command that ignores
// SIGTERM would otherwise make it wait out (30 s here). The first Ctrl-C
// cancels the turn, which the built-in agent answers with a terminal/kill
// that the command ignores.
func TestRemoteSSHSecondInterrupt(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	mark := newMark(t)
	// exec: the terminal's own process ignores SIGTERM, not only a child
	// of it (a group whose leader has exited is swept at once).
	line := remoteMarkVar + "=" + mark + " exec sh -c 'trap \"\" TERM; setsid sleep 1091 & sleep 1092; wait'"
	args := append([]string{"run", "--approve-all", "--sandbox", "off", "--kill-grace", "30s"}, remoteArgs(t, s, targetDir(t))...)
	args = append(args, "-p", line, "--", acptermBin, "agent")
	cmd, stdout, stderr, done := startRemote(t, mark, 3, nil, args...)
	cancelling := stderr.saw("acpterm: cancelling the turn")
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-cancelling:
	case <-time.After(10 * time.Second):
		t.Fatalf("no cancel 10 s after the first Ctrl-C\nstderr:\n%s", stderr)
	}
	if left := sshtest.Running(remoteMarkVar, mark); len(left) < 3 {
		t.Fatalf("the command ended at the first Ctrl-C (%v): it must ignore SIGTERM", left)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after the second Ctrl-C, still running on the target: %v", left)
	} else {
		t.Logf("nothing left on the target %v after the second Ctrl-C", time.Since(start).Round(time.Millisecond))
	}
	waitEnd(t, cmd, done, stderr, 10*time.Second)
	mustContain(t, "stderr", stderr.String(), "acpterm: killing the agent and its terminals")
	if out := stdout.String(); strings.Contains(out, "still running") {
		t.Errorf("a terminal still reads as running:\n%s", out)
	}
}

// TestRemoteSSHCtrlC: a real Ctrl-C, SIGINT to the whole foreground
// process group as a terminal sends it, cancels the turn and nothing
// else: the transport (in a process group of its own) survives it, the
// agent's terminal/kill ends the command on the target with a final
// update, the run ends "cancelled" (130), and nothing is left on the
// target.
func TestRemoteSSHCtrlC(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	mark := newMark(t)
	args := append([]string{"run", "--approve-all", "--format", "json"}, remoteArgs(t, s, targetDir(t))...)
	args = append(args, "-p", remoteMarkVar+"="+mark+" sleep 1101", "--", acptermBin, "agent")
	cmd, stdout, stderr, done := startRemoteAs(t, &syscall.SysProcAttr{Setpgid: true}, mark, 1, nil, args...)
	// The foreground group of the terminal acpterm would run in: its own.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitEnd(t, cmd, done, stderr, 20*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130 (cancelled)\nstderr:\n%s", code, stderr)
	}
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
		t.Errorf("after the Ctrl-C, still running on the target: %v", left)
	}
	evs := parseEvents(t, stdout.String())
	if last := evs[len(evs)-1]; last.str("event") != "stop" || last.str("stopReason") != "cancelled" {
		t.Errorf("last event %v, want the stop, cancelled", last)
	}
	exits := ofKind(evs, "terminal_exit")
	if len(exits) != 1 || exits[0].str("signal") != "SIGTERM" || exits[0].str("lost") != "" {
		t.Errorf("terminal_exit events %v, want one, SIGTERM from the agent's kill", exits)
	}
	errText := stderr.String()
	mustContain(t, "stderr", errText, "cancelling the turn")
	for _, bad := range []string{"exit status 255", "was lost", "killing the agent"} {
		if strings.Contains(errText, bad) {
			t.Errorf("stderr says %q: the Ctrl-C reached more than acpterm\n%s", bad, errText)
		}
	}
}
