package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/expect"
	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// An agent that leads its own process group is shut down with its group:
// what it started does not outlive it.
func TestStartAgentSignalsItsGroup(t *testing.T) {
	t.Parallel()
	// Not an ACP agent: a shell that ignores its stdin's end and waits on
	// a child, printing the child's pid to stderr.
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! >&2; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(nil))
	if err != nil {
		t.Fatal(err)
	}
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	if err := cc.Close(); !errors.Is(err, ErrAgentSignalled) {
		t.Fatalf("Close: %v, want ErrAgentSignalled: the shell ignores its stdin's end", err)
	}
	<-cc.Exited()
	var ee *exec.ExitError
	if err := cc.ExitError(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("agent exit: %v, want killed by SIGTERM", err)
	}
	if err := proctest.WaitExit([]int{child}, 5*time.Second); err != nil {
		t.Fatalf("the agent's child survived its shutdown: %v", err)
	}
}

// An agent that exits mid-call while a child of its holds its stdout open:
// the call fails at once with ErrConnClosed (stdout never ends, but the
// agent is gone), and Close, with Contain, takes the child.
func TestStartAgentExitWithChildHoldingStdout(t *testing.T) {
	t.Parallel()
	for _, contain := range []bool{true, false} {
		t.Run(fmt.Sprintf("contain=%v", contain), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), testAgentEnv+"=orphan", "GORACE=atexit_sleep_ms=0")
			// Stderr is a pipe of the test's own, read here: the child
			// holds it open too, and Wait would otherwise wait for its
			// copy until cmd.WaitDelay, 2 s of nothing.
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr := expect.NewBuffer()
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				_, _ = io.Copy(stderr, pr)
				pr.Close()
			}()
			cmd.Stderr = pw
			cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(&ConnOptions{Contain: contain}))
			pw.Close()
			if err != nil {
				<-copied
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := cc.Initialize(ctx, nil); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"})
			took := time.Since(start)
			stderr.Expect(t, "\n", 10*time.Second)
			child, perr := strconv.Atoi(strings.TrimSpace(stderr.String()))
			if perr != nil {
				t.Fatalf("agent printed %q", stderr.String())
			}
			defer func() {
				_ = syscall.Kill(child, syscall.SIGKILL)
				_ = proctest.WaitExit([]int{child}, 5*time.Second)
				<-copied // the child's end of stderr is closed now
			}()
			if !errors.Is(err, ErrConnClosed) {
				t.Fatalf("NewSession to an agent that exited: %v after %v, want ErrConnClosed", err, took)
			}
			// The drain ends 200 ms after the exit; the rest is the
			// start of a process on a loaded machine.
			if took > 5*time.Second {
				t.Fatalf("NewSession failed only after %v", took)
			}
			select {
			case <-cc.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done still open after the agent exited")
			}
			<-cc.Exited()
			var ee *exec.ExitError
			if err := cc.ExitError(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("ExitError = %v, want exit status 3", err)
			}
			if err := cc.Close(); err != nil {
				t.Errorf("Close: %v, want nil: the agent exited by itself", err)
			}
			if !contain {
				return
			}
			if err := proctest.WaitExit([]int{child}, 5*time.Second); err != nil {
				t.Errorf("the agent's child survived Close: %v", err)
			}
		})
	}
}

// What an agent writes just before it exits is still delivered, although
// a child of its holds its stdout open: the drain reads the pipe to its
// end before the connection ends.
func TestStartAgentExitDrainsStdout(t *testing.T) {
	t.Parallel()
	// Not an ACP agent: a shell that leaves a child on its stdout, writes
	// many notifications and exits.
	var script strings.Builder
	script.WriteString("sleep 300 & echo $! >&2\n")
	const n = 2000
	fmt.Fprintf(&script, "i=0; while [ $i -lt %d ]; do echo '{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"x\"}}}}'; i=$((i+1)); done\n", n)
	cmd := exec.Command("/bin/sh", "-c", script.String())
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cl := &countingClient{}
	cc, err := StartAgent(cmd, cl, shortShutdown(&ConnOptions{Contain: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	defer func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = proctest.WaitExit([]int{child}, 5*time.Second)
	}()
	select {
	case <-cc.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the connection outlived the agent")
	}
	if err := cc.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got := cl.updates.Load(); got != n {
		t.Fatalf("%d notifications delivered, want %d", got, n)
	}
}

// countingClient counts the session updates it gets.
type countingClient struct {
	minimalClient
	updates atomic.Int64
}

func (c *countingClient) SessionUpdate(context.Context, *SessionNotification) error {
	c.updates.Add(1)
	return nil
}

// An agent that exits while a child of its keeps its stderr open: with
// cmd.Stderr not a file, Exited must not wait for the child.
func TestStartAgentExitedDespiteChildHoldingStderr(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! >&2")
	cmd.WaitDelay = 200 * time.Millisecond
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	defer func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = proctest.WaitExit([]int{child}, 5*time.Second)
	}()
	select {
	case <-cc.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("Exited waited for the agent's child")
	}
	if err := cc.ExitError(); !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("ExitError = %v, want exec.ErrWaitDelay", err)
	}
}

// startDaemonAgent starts, with Contain, a shell that starts a setsid
// daemon, prints the daemon's pid on stderr and then ignores its stdin's
// end; it returns the connection and the daemon's pid.
func startDaemonAgent(t *testing.T) (*ClientConn, int) {
	t.Helper()
	// The daemon prints its own pid, so that it has left the agent's
	// session and group by the time the test reads it.
	cmd := exec.Command("/bin/sh", "-c", "setsid sh -c 'echo $$ >&2; exec sleep 300 2>/dev/null' </dev/null >/dev/null & exec sleep 300")
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(&ConnOptions{Contain: true}))
	if err != nil {
		t.Fatal(err)
	}
	stderr.Expect(t, "\n", 10*time.Second)
	daemon, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	t.Cleanup(func() {
		_ = syscall.Kill(daemon, syscall.SIGKILL)
		_ = cc.Close()
	})
	return cc, daemon
}

// A contained agent runs in its own cgroup, and Close takes what it
// started, setsid daemons included, and the cgroup.
func TestStartAgentContainedCloseTakesDaemons(t *testing.T) {
	t.Parallel()
	cc, daemon := startDaemonAgent(t)
	dir := cc.proc.cgroup
	if dir == "" {
		t.Skip("no writable cgroup v2: the process group is all there is")
	}
	if got := procCgroup(t, daemon); got != filepath.Base(dir) {
		t.Fatalf("the daemon is in cgroup %q, want the agent's %s", got, dir)
	}
	if st, _ := proctest.ReadStat(daemon); st.Session == cc.proc.cmd.Process.Pid || st.PGrp == cc.proc.cmd.Process.Pid {
		t.Fatalf("the daemon did not leave the agent's group and session: %+v", st)
	}
	// The agent, sleep, ignores its stdin's end: Close signals it, and
	// reports no more than that.
	if err := cc.Close(); !errors.Is(err, ErrAgentSignalled) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Close: %v, want ErrAgentSignalled alone", err)
	}
	if err := proctest.WaitExit([]int{daemon}, 5*time.Second); err != nil {
		t.Fatalf("the agent's setsid daemon survived Close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the agent's cgroup is left behind: %v", err)
	}
}

// Kill takes the agent and everything in its cgroup at once.
func TestStartAgentKill(t *testing.T) {
	t.Parallel()
	cc, daemon := startDaemonAgent(t)
	began := time.Now()
	cc.Kill()
	<-cc.Exited()
	var ee *exec.ExitError
	if err := cc.ExitError(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("agent exit: %v, want killed by SIGKILL", err)
	}
	if cc.proc.cgroup != "" {
		if err := proctest.WaitExit([]int{daemon}, 5*time.Second); err != nil {
			t.Fatalf("the agent's setsid daemon survived Kill: %v", err)
		}
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Kill took %v to take effect", d)
	}
	cc.Kill() // idempotent, also after the exit
}

// A contained agent dies with the process that started it, even when that
// one is SIGKILLed; its cgroup is then stale, and the next one made under
// the same parent removes it.
func TestStartAgentDiesWithParent(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testAgentEnv+"=parent", "GORACE=atexit_sleep_ms=0")
	out := expect.NewBuffer()
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	out.Expect(t, "\n", 10*time.Second)
	agent, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("parent printed %q", out.String())
	}
	name := procCgroup(t, agent)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := proctest.WaitExit([]int{agent}, 5*time.Second); err != nil {
		t.Fatalf("the agent outlived its SIGKILLed parent: %v", err)
	}
	if !strings.HasPrefix(name, "acpterm-") {
		return // not in a cgroup of its own here
	}
	if !cgroup.Stale(name) {
		t.Fatalf("the cgroup %s of a dead parent is not stale", name)
	}
	parent, err := cgroup.Own()
	if err != nil {
		t.Fatal(err)
	}
	// The next contained start cleans up.
	startDaemonAgent(t)
	if _, err := os.Stat(filepath.Join(parent, name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale cgroup %s left after the next start: %v", name, err)
	}
}

// procCgroup is the last element of pid's cgroup v2 path.
func procCgroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Base(p)
		}
	}
	t.Fatalf("no cgroup v2 line in %q", b)
	return ""
}

// TestStartAgentTermWait: TermWait, not TerminateDuration, is the time an
// agent has after SIGTERM. The agent ignores its stdin closing and takes
// 300 ms to stop on SIGTERM: with a short TerminateDuration alone it is
// killed, with a longer TermWait it stops on SIGTERM.
func TestStartAgentTermWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		termWait time.Duration
		killed   bool
	}{
		{"TerminateDuration alone", 0, true},
		{"TermWait", 3 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The trap runs once the foreground sleep ends: within 50 ms.
			cmd := exec.Command("/bin/sh", "-c", `trap 'sleep 0.3; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
			opts := &ConnOptions{TerminateDuration: 100 * time.Millisecond, TermWait: tc.termWait, HandlerWait: testHandlerWait}
			cc, err := StartAgent(cmd, minimalClient{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			err = cc.Close()
			if !errors.Is(err, ErrAgentSignalled) {
				t.Fatalf("Close: %v, want the agent reported signalled", err)
			}
			if killed := errors.Is(err, ErrAgentKilled); killed != tc.killed {
				t.Fatalf("Close: %v; killed %v, want %v", err, killed, tc.killed)
			}
		})
	}
}
