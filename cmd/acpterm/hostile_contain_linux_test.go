package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"golang.org/x/sys/unix"
)

// The containment cases of the hostile-agent suite: an agent that leaves a
// setsid daemon behind, an acpterm that is SIGKILLed under an agent that
// ignores its stdin's end, and a request handler that never returns while
// the user presses Ctrl-C. Nothing the agent started outlives acpterm (or,
// when acpterm was killed, the next acpterm's start), and every exit is
// prompt.

// containPIDEnv names the file where a containment agent writes
// "AGENT DAEMON", the pids of itself and of the setsid daemon it started.
const containPIDEnv = "ACPTERM_E2E_CONTAIN_PIDS"

func init() {
	for _, mode := range []string{"contain-daemon", "contain-deaf", "contain-flood"} {
		registerHostile(mode, func() int {
			a := &containAgent{mode: mode}
			conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, nil)
			a.conn.Store(conn)
			<-conn.Done()
			if mode == "contain-deaf" {
				blockForever() // deaf to its stdin's end
			}
			conn.Close()
			return 0
		})
	}
}

// blockForever parks the process until a signal ends it. A read from a
// pipe that nobody writes, not select {}, which the runtime would call a
// deadlock once no other goroutine is left.
func blockForever() {
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(4)
	}
	_, _ = r.Read(make([]byte, 1))
	w.Close() // keeps w from the garbage collector until then
	os.Exit(4)
}

type containAgent struct {
	mode string
	conn atomic.Pointer[acp.AgentConn]
}

func (a *containAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}, nil
}

func (a *containAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_contain"}, nil
}

func (a *containAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

func (a *containAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	daemon, err := startDaemon()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(os.Getenv(containPIDEnv), fmt.Appendf(nil, "%d %d\n", os.Getpid(), daemon), 0o644); err != nil {
		return nil, err
	}
	if a.mode == "contain-daemon" {
		return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	conn := a.conn.Load()
	term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "sleep", Args: []string{"300"}})
	if err != nil {
		return nil, err
	}
	call := acp.NewTerminalToolCall("call_sleep", "sleep 300", term.ID)
	if err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}
	if a.mode == "contain-flood" {
		// Far more output than the test reads, until killed.
		fmt.Fprintln(os.Stderr, "fake agent: flooding")
		text := strings.Repeat("flood ", 40)
		for ctx.Err() == nil {
			_ = conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
				Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}}})
		}
	}
	<-conn.Done() // deaf to session/cancel
	return nil, ctx.Err()
}

// startDaemon starts `setsid sleep 300`, detached from everything, and
// returns its pid once it has left the agent's session.
func startDaemon() (int, error) {
	cmd := exec.Command("setsid", "sh", "-c", "echo $$; exec sleep 300 >/dev/null 2>&1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return 0, err
	}
	// Not waited for: the agent leaves it behind on purpose.
	return strconv.Atoi(strings.TrimSpace(line))
}

// readPIDs reads the agent's and the daemon's pids.
func readPIDs(t *testing.T, file string) (agent, daemon int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(b), &agent, &daemon); err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return agent, daemon
}

// cgroupsOf lists the cgroups that acpterm process pid made under its (and
// the test's) cgroup; nil where there is no cgroup v2.
func cgroupsOf(t *testing.T, pid int) []string {
	t.Helper()
	parent, err := cgroup.Own()
	if err != nil {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("acpterm-%d-*", pid)))
	return dirs
}

func assertDead(t *testing.T, what string, pids ...int) {
	t.Helper()
	if err := proctest.WaitExit(pids, 5*time.Second); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// (a) The agent starts a setsid daemon and ends its turn: once acpterm has
// exited the daemon is gone, and so is every cgroup acpterm made.
func TestHostileContainSetsidDaemon(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	s := startAcpterm(t, []string{fakeAgentEnv + "=contain-daemon", containPIDEnv + "=" + pids},
		"run", "--format", "json", "-p", "hi", "--", testExe(t))
	s.finish(t, 0)
	if d := time.Since(s.start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
	agent, daemon := readPIDs(t, pids)
	assertDead(t, "the agent", agent)
	assertDead(t, "the agent's setsid daemon outlived acpterm", daemon)
	if left := cgroupsOf(t, s.cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("cgroups left behind: %v", left)
	}
}

// (b) acpterm is SIGKILLed while the agent ignores its stdin's end and a
// terminal runs `sleep 300`: the agent and the terminal die with it
// (PR_SET_PDEATHSIG); the agent's setsid daemon, out of pdeathsig's reach,
// is in a cgroup that acpterm's watchdog kills at once, and that the next
// acpterm removes.
func TestHostileContainKilledAcpterm(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	s := startAcpterm(t, []string{fakeAgentEnv + "=contain-deaf", containPIDEnv + "=" + pids},
		"run", "--format", "json", "--approve-all", "-p", "hi", "--", testExe(t))
	term := pidOf(t, s.stdout.waitFor(t, `"event":"terminal_created"`))
	agent, daemon := readPIDs(t, pids) // written before the terminal was asked for
	owner := s.cmd.Process.Pid
	stale := cgroupsOf(t, owner)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.wait()
	killed := time.Now()
	assertDead(t, "the agent outlived the SIGKILLed acpterm", agent)
	assertDead(t, "the terminal outlived the SIGKILLed acpterm", term)
	if len(stale) == 0 {
		// No writable cgroup v2: the process group is all there is, and
		// the daemon left it.
		_ = syscall.Kill(daemon, syscall.SIGKILL)
		t.Skip("no acpterm cgroups here: the setsid daemon is out of reach")
	}
	t.Logf("stale cgroups: %v", stale)
	// The watchdog acpterm left outside its cgroups kills what they held
	// as soon as acpterm is gone, without waiting for another start.
	assertDead(t, "the setsid daemon outlived the SIGKILLed acpterm", daemon)
	// The next acpterm start removes the emptied cgroups (or another
	// acpterm, running meanwhile, did).
	r := acpterm(t, opts{}, "run", "--format", "json", "--approve-all", "-p", "true", "--", acptermBin, "agent")
	if r.code != 0 {
		t.Fatalf("the next run: exit %d\n%s", r.code, r.stderr)
	}
	for _, dir := range stale {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("stale cgroup %s left after the next start", dir)
		}
	}
	if d := time.Since(killed); d > 15*time.Second {
		t.Errorf("cleaning up took %v", d)
	}
}

// (c) The agent floods session/update while acpterm's stdout is no longer
// read (a handler may then block writing to it; acpterm's exit backstop
// covers that), ignores session/cancel, and the user presses Ctrl-C
// twice, or sends SIGTERM, SIGHUP (the terminal closed, ssh dropped) or
// SIGQUIT (Ctrl-\) twice: acpterm kills the agent and its terminal and
// exits promptly with 130, leaving nothing behind.
func TestHostileContainStuckHandlerInterrupts(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			if testing.Short() && sig != syscall.SIGINT {
				t.Skip("-short: SIGINT takes the same path")
			}
			t.Parallel()
			pids := filepath.Join(t.TempDir(), "pids")
			s, term := startUnread(t, []string{fakeAgentEnv + "=contain-flood", containPIDEnv + "=" + pids},
				"run", "--format", "json", "--approve-all", "-p", "hi", "--", testExe(t))
			s.stderr.waitFor(t, "fake agent: flooding")
			agent, daemon := readPIDs(t, pids)
			contained := len(cgroupsOf(t, s.cmd.Process.Pid)) > 0
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			s.stderr.waitFor(t, "cancelling the turn")
			second := time.Now()
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan int, 1)
			go func() {
				s.stderr.drain()
				err := s.cmd.Wait()
				code := -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err == nil {
					code = 0
				}
				exited <- code
			}()
			var code int
			select {
			case code = <-exited:
			case <-time.After(hardExitWait + 5*time.Second):
				t.Fatalf("acpterm still running %v after the second %v", time.Since(second), sig)
			}
			took := time.Since(second)
			if code != 130 {
				t.Fatalf("exit %d, want 130\nstderr:\n%s", code, s.stderr.drain())
			}
			t.Logf("exited %v after the second signal; stderr:\n%s", took, s.stderr.drain())
			if took > hardExitWait+2*time.Second {
				t.Errorf("exited %v after the second %v", took, sig)
			}
			assertDead(t, "the agent", agent)
			assertDead(t, "the terminal", term)
			if contained {
				assertDead(t, "the agent's setsid daemon", daemon)
			} else {
				_ = syscall.Kill(daemon, syscall.SIGKILL)
			}
			if left := cgroupsOf(t, s.cmd.Process.Pid); len(left) > 0 {
				t.Fatalf("cgroups left behind: %v", left)
			}
		})
	}
}

// startUnread starts acpterm with a stdout that is read only up to the
// first terminal_created event, whose pid it returns: from then on
// acpterm's writes to stdout block once the pipe is full.
func startUnread(t *testing.T, env []string, args ...string) (*started, int) {
	t.Helper()
	cmd := exec.Command(acptermBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	s := &started{cmd: cmd, stderr: streamLines(errR), start: time.Now()}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			s.stderr.drain()
			_ = cmd.Wait()
		}
		outR.Close()
	})
	br := bufio.NewReader(outR)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stdout ended without terminal_created: %v", err)
		}
		if strings.Contains(line, `"event":"terminal_created"`) {
			return s, pidOf(t, line)
		}
	}
}

// (d) One SIGHUP (the terminal closed, the ssh connection dropped) or one
// SIGQUIT (Ctrl-\) ends the run as SIGTERM does: the turn is cancelled,
// the agent that ignores it is killed after --cancel-grace, and nothing
// acpterm started is left: not the terminal, not the agent's setsid
// daemon, no cgroup. Left to Go's defaults, either signal ended acpterm at
// once and the daemon lived on in a cgroup nobody removed.
func TestHostileContainHangupQuit(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			pids := filepath.Join(t.TempDir(), "pids")
			s := startAcpterm(t, []string{fakeAgentEnv + "=contain-deaf", containPIDEnv + "=" + pids},
				"run", "--format", "json", "--approve-all", "--cancel-grace", "300ms", "-p", "hi", "--", testExe(t))
			term := pidOf(t, s.stdout.waitFor(t, `"event":"terminal_created"`))
			agent, daemon := readPIDs(t, pids)
			contained := len(cgroupsOf(t, s.cmd.Process.Pid)) > 0
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			stderr := s.stderr.drain()
			code := s.wait()
			assertDead(t, "the agent", agent)
			assertDead(t, "the terminal", term)
			if contained {
				assertDead(t, "the agent's setsid daemon outlived acpterm", daemon)
				if left := cgroupsOf(t, s.cmd.Process.Pid); len(left) > 0 {
					t.Errorf("cgroups left behind: %v", left)
				}
			} else {
				// No writable cgroup v2: the process group is all there
				// is, and the daemon left it.
				_ = syscall.Kill(daemon, syscall.SIGKILL)
			}
			if code != 130 || !strings.Contains(stderr, "cancelling the turn") {
				t.Errorf("exit %d after %v, want 130 after cancelling the turn; stderr:\n%s", code, sig, stderr)
			}
		})
	}
}

// (e) exec-server --agent hung up on (sshd sends SIGHUP when the
// connection drops) ends the agent with everything it started, its setsid
// daemon included, as the end of its stdin does. Left to Go's defaults the
// signal ended the server at once and the daemon lived on.
func TestHostileContainExecServerHangup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "daemon")
	agent := `setsid sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$P" </dev/null >/dev/null 2>&1 &
while [ ! -s "$P" ]; do :; done; echo ready; exec sleep 300`
	cmd := exec.Command(acptermBin, "exec-server", "--agent", "--", "sh", "-c", agent)
	cmd.Env = append(os.Environ(), "P="+pidFile)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe() // held open: its end would stop the agent too
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the agent said %q, %v", line, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	contained := len(cgroupsOf(t, cmd.Process.Pid)) > 0
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("exec-server --agent still running 30 s after SIGHUP")
	}
	if !contained {
		_ = syscall.Kill(daemon, syscall.SIGKILL)
		t.Skip("no acpterm cgroups here: the setsid daemon is out of reach")
	}
	assertDead(t, "the agent's setsid daemon outlived the hung-up exec-server", daemon)
	if left := cgroupsOf(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}
