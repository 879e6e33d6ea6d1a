package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/internal/text/pathutil"
)

// box runs a command under a policy, either wrapped (Wrap, then Start) or
// through a Spawner: the tests of what a sandbox enforces run both ways.
type box struct{ spawner bool }

// both runs test wrapped and through a Spawner; under -short, through the
// Spawner alone. Either way the confinement is the helper's setupSelf,
// the same code: the two differ in how the command reaches it (exec in
// place, or a fork of a helper that serves many), and the Spawner's way
// is the one the terminals take for every command. What is the wrapped
// path's own (the exec in place, the TMPDIR Wrap makes, Cleanup) keeps
// the tests that wrap alone, which -short runs (TestEnvAndProcess and
// TestExitStatus among them). The tests that call it run in parallel
// unless they replace a package variable (withoutNamespaces,
// TestLandlockAlone): they wait on the processes they start.
func both(t *testing.T, test func(*testing.T, box)) {
	if !testing.Short() {
		t.Run("wrap", func(t *testing.T) { test(t, box{}) })
	}
	t.Run("spawner", func(t *testing.T) { test(t, box{spawner: true}) })
}

// run runs cmd under p and returns its combined output, once every holder
// of the output pipe has closed it (as exec.Cmd.CombinedOutput does), and
// its exit status.
func (b box) run(t *testing.T, p *Policy, cmd *exec.Cmd) (string, int) {
	t.Helper()
	if !b.spawner {
		wrap(t, p, cmd)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	s := newSpawner(t, p)
	c, out := spawn(t, s, &Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Environ(), Dir: cmd.Dir})
	text := <-out
	st, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Error(err)
	}
	if st.Signal != 0 {
		return text, 128 + int(st.Signal)
	}
	return text, st.Code
}

func newSpawner(t testing.TB, p *Policy) *Spawner {
	t.Helper()
	s, err := p.NewSpawner()
	if err != nil {
		t.Fatalf("NewSpawner: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// spawn starts c with its stdout and stderr on a pipe, in a process group
// of its own, and returns a channel that gets everything written to the
// pipe once all its holders closed it.
func spawn(t testing.TB, s *Spawner, c *Cmd) (*Child, <-chan string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = w, w
	c.Setpgid, c.Pdeathsig = true, syscall.SIGKILL
	child, err := s.Start(c)
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("Start(%q): %v", c.Args, err)
	}
	out := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer r.Close()
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	t.Cleanup(wg.Wait)
	return child, out
}

func TestSpawnerApplied(t *testing.T) {
	t.Parallel()
	need(t, true)
	root, _ := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}
	cmd := exec.Command("/bin/true")
	wa := wrap(t, p, cmd)
	s := newSpawner(t, p)
	c, out := spawn(t, s, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `echo "$TMPDIR"`}, Env: os.Environ()})
	if got := strings.TrimSpace(<-out); got != c.Applied().TempDir {
		t.Errorf("TMPDIR = %q, Applied().TempDir = %q", got, c.Applied().TempDir)
	}
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	sa := *c.Applied()
	tmp := sa.TempDir
	if !sa.Shared || !pathutil.Within(tmp, s.tmpRoot) || tmp == s.tmpRoot {
		t.Errorf("Applied = %v, TempDir %s, root %s", &sa, tmp, s.tmpRoot)
	}
	// The same as Wrap's but for the temporary directory, which is the
	// spawner's root, and Shared.
	want := *wa
	want.TempDir, want.Shared, want.ownTemp = tmp, true, false
	want.Writable = append(want.Writable[:len(want.Writable)-1:len(want.Writable)-1], s.tmpRoot)
	if got, w := fmt.Sprintf("%+v", sa), fmt.Sprintf("%+v", want); got != w {
		t.Errorf("Applied\n got %s\nwant %s", got, w)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR %s after Release: %v", tmp, err)
	}
	root2 := s.tmpRoot
	s.Close()
	if _, err := os.Stat(root2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary root %s after Close: %v", root2, err)
	}
}

func TestSpawnerExitStatus(t *testing.T) {
	t.Parallel()
	need(t, false)
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	for _, tc := range []struct {
		script string
		want   ExitStatus
	}{
		{"exit 0", ExitStatus{}},
		{"exit 3", ExitStatus{Code: 3}},
		{"kill -TERM $$", ExitStatus{Signal: syscall.SIGTERM}},
		{"kill -KILL $$", ExitStatus{Signal: syscall.SIGKILL}},
	} {
		c, out := spawn(t, s, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", tc.script}})
		<-out
		st, err := c.Wait()
		if err != nil || st != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.script, st, err, tc.want)
		}
		if err := c.Release(); err != nil {
			t.Error(err)
		}
	}
	// Exec failures are the start's error, with the errno, as from
	// exec.Cmd.Start.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]syscall.Errno{
		filepath.Join(dir, "missing"): syscall.ENOENT,
		filepath.Join(dir, "noexec"):  syscall.EACCES,
	} {
		_, err := s.Start(&Cmd{Path: path})
		var pe *os.PathError
		if !errors.Is(err, want) || !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("Start(%s): %v, want %v", path, err, want)
		}
	}
	if _, err := s.Start(&Cmd{Path: "/bin/true", Dir: filepath.Join(dir, "missing")}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("missing dir: %v", err)
	}
}

// A command gets no descriptor beyond what a wrapped one gets: neither
// the helper's socket nor the descriptors of the start (cgroup) or of
// other starts. The test binary's own (cgo, runtime) appear in both.
func TestSpawnerNoFDLeak(t *testing.T) {
	t.Parallel()
	need(t, true)
	root, _ := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}
	args := []string{"act", "fds"}
	env := append(os.Environ(), actEnv+"=1")
	wrapped := exec.Command(os.Args[0], args[1:]...)
	wrapped.Env = env
	wrap(t, p, wrapped)
	wout, err := wrapped.Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, f := range strings.Fields(string(wout)) {
		if !strings.HasPrefix(f, "1:") { // stdout differs: a pipe each
			allowed[f] = true
		}
	}

	s := newSpawner(t, p)
	cg := cgroupDir(t)
	var cgf *os.File
	if cg != "" {
		if cgf, err = os.Open(cg); err != nil {
			t.Fatal(err)
		}
		defer cgf.Close()
	}
	c, out := spawn(t, s, &Cmd{Path: os.Args[0], Args: args, Env: env, Cgroup: cgf})
	text := <-out
	for _, f := range strings.Fields(text) {
		fd, target, _ := strings.Cut(f, ":")
		if fd != "1" && fd != "2" && !allowed[f] || strings.HasPrefix(target, "socket:") {
			t.Errorf("descriptor %s in the command (a wrapped one has %s)", f, wout)
		}
	}
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if cg != "" {
		// A command started in the cgroup it was given.
		c, out := spawn(t, s, &Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/cgroup"}, Cgroup: cgf})
		if got := <-out; !strings.Contains(got, filepath.Base(cg)) {
			t.Errorf("cgroup of the command: %q, want %s", got, cg)
		}
		c.Wait()
		c.Release()
	}
}

// cgroupDir makes a cgroup for the test where the tree is writable, or
// returns "".
func cgroupDir(t *testing.T) string {
	dir, err := cgroup.New("", "sandbox-test")
	if err != nil {
		t.Logf("no cgroup: %v", err)
		return ""
	}
	t.Cleanup(func() {
		if err := cgroup.RemoveTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// Killing the process group reaches the command's children; the helper
// keeps the leader unreaped until Release, so the group's number stays
// the command's.
func TestSpawnerKillGroup(t *testing.T) {
	t.Parallel()
	need(t, false)
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	c, r := startLines(t, s, `sleep 100 & sleep 100 & echo $!; wait`)
	pid, err := strconv.Atoi(readLine(t, r))
	if err != nil {
		t.Fatal(err)
	}
	c.Signal(syscall.SIGKILL, true)
	if st, err := c.Wait(); err != nil || st.Signal != syscall.SIGKILL {
		t.Errorf("Wait: %+v, %v; want SIGKILL", st, err)
	}
	if err := proctest.WaitExit([]int{c.Pid, pid}, 5*time.Second); err != nil {
		t.Error(err)
	}
	if err := proctest.WaitGroupGone(c.Pid, 5*time.Second); err != nil {
		t.Error(err)
	}
	if err := c.Release(); err != nil {
		t.Error(err)
	}
}

// startLines starts a shell script whose output the test reads line by
// line (while the command runs).
func startLines(t *testing.T, s *Spawner, script string) (*Child, *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c, err := s.Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Stdout: w, Stderr: w, Setpgid: true, Pdeathsig: syscall.SIGKILL})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(r)
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the command's output: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}

// A helper that dies takes its running commands along (Pdeathsig, and the
// host kills their groups), Wait ends with ErrSpawnerDead instead of
// hanging, and later starts fail clearly.
func TestSpawnerHelperDies(t *testing.T) {
	t.Parallel()
	need(t, false)
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	c, r := startLines(t, s, `sleep 100 & echo $!; wait`)
	pid, err := strconv.Atoi(readLine(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(); !errors.Is(err, ErrSpawnerDead) {
		t.Errorf("Wait after the helper died: %v, want ErrSpawnerDead", err)
	}
	if err := proctest.WaitExit([]int{c.Pid, pid}, 5*time.Second); err != nil {
		t.Errorf("the command outlived its helper: %v", err)
	}
	if _, err := s.Start(&Cmd{Path: "/bin/true"}); !errors.Is(err, ErrSpawnerDead) {
		t.Errorf("Start after the helper died: %v, want ErrSpawnerDead", err)
	}
	c.Release()
	s.Close()
}

// stoppedHelper starts a command in a new helper with a short reply
// timeout, then stops the helper (SIGSTOP) so that it answers nothing.
func stoppedHelper(t *testing.T) (*Spawner, *Child) {
	t.Helper()
	need(t, false)
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	s.replyTimeout = 300 * time.Millisecond
	c, r := startLines(t, s, `echo $$; exec sleep 100`)
	readLine(t, r)
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is sent, not yet obeyed: a thread of the helper running
	// on another CPU can still answer or report an exit until the whole
	// process has stopped, which its parent (this test) learns from
	// waitid. WNOWAIT leaves the stop to be seen again; the spawner's own
	// wait for the helper asks only for its exit.
	var si unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, s.cmd.Process.Pid, &si, unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			t.Fatalf("waiting for the helper to stop: %v", err)
		}
	}
	return s, c
}

// A helper that stops answering (a command may SIGSTOP it: they share a
// Landlock domain) fails starts and waits after the reply timeout, and is
// killed with its commands.
func TestSpawnerHelperStopped(t *testing.T) {
	t.Parallel()
	s, c := stoppedHelper(t)
	start := time.Now()
	if _, err := s.Start(&Cmd{Path: "/bin/true"}); !errors.Is(err, ErrSpawnerDead) || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("Start with the helper stopped: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Start took %v", d)
	}
	if _, err := c.Wait(); !errors.Is(err, ErrSpawnerDead) {
		t.Errorf("Wait: %v", err)
	}
	if err := proctest.WaitExit([]int{c.Pid}, 5*time.Second); err != nil {
		t.Error(err)
	}
	c.Release()
	s.Close()
}

// The exit of a command whose helper stopped before reporting it is seen
// through the pidfd; Wait gives up after the reply timeout.
func TestSpawnerNoExitReport(t *testing.T) {
	t.Parallel()
	s, c := stoppedHelper(t)
	c.Signal(syscall.SIGKILL, true)
	if _, err := c.Wait(); !errors.Is(err, ErrSpawnerDead) || !strings.Contains(err.Error(), "no exit report") {
		t.Errorf("Wait: %v", err)
	}
	c.Release()
	s.Close()
}

func TestSpawnerConcurrent(t *testing.T) {
	t.Parallel()
	need(t, true)
	root, _ := workspace(t)
	s := newSpawner(t, &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, w, err := os.Pipe()
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			c, err := s.Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `echo $0 > "$TMPDIR/f" && cat "$TMPDIR/f"; exit $0`, strconv.Itoa(i)},
				Stdout: w, Setpgid: true, Pdeathsig: syscall.SIGKILL})
			w.Close()
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(r)
			st, err := c.Wait()
			if err == nil && (strings.TrimSpace(string(b)) != strconv.Itoa(i) || st.Code != i) {
				err = fmt.Errorf("command %d: output %q, status %+v", i, b, st)
			}
			if rerr := c.Release(); err == nil {
				err = rerr
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// Not parallel: it replaces a package variable the other tests read.
func TestSpawnerErrors(t *testing.T) {
	saved := kernelABI
	kernelABI = func() int { return 0 }
	_, err := (&Policy{Mode: ReadOnly}).NewSpawner()
	kernelABI = saved
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewSpawner without Landlock: %v, want ErrUnsupported", err)
	}
	initCalled.Store(false)
	_, err = (&Policy{Mode: ReadOnly}).NewSpawner()
	initCalled.Store(true)
	if !errors.Is(err, ErrNoInit) {
		t.Errorf("NewSpawner without Init: %v, want ErrNoInit", err)
	}
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	s.Close()
	if _, err := s.Start(&Cmd{Path: "/bin/true"}); !errors.Is(err, ErrSpawnerDead) {
		t.Errorf("Start after Close: %v", err)
	}
	s.Close() // idempotent
}

// A start the host cannot adopt (the pid is not the helper's child, or is
// gone: a helper reaps before release only when it is ending) fails with
// ErrSpawnerDead, since the spawner is killed for it; the terminal runtime
// then restarts the spawner rather than taking it for the command's error.
func TestSpawnerStartNotAdopted(t *testing.T) {
	t.Parallel()
	need(t, false)
	s := newSpawner(t, &Policy{Mode: ReadOnly})
	defer s.Close()
	c := &Child{started: make(chan struct{})}
	s.mu.Lock()
	s.pending[1<<40] = c
	s.mu.Unlock()
	if err := s.dispatch(&reply{Op: "started", ID: 1 << 40, Pid: os.Getpid()}); err == nil {
		t.Fatal("dispatch adopted a process that is not the helper's child")
	}
	<-c.started
	if !errors.Is(c.startErr, ErrSpawnerDead) || !strings.Contains(c.startErr.Error(), "not the helper's child") {
		t.Errorf("start error %v, want ErrSpawnerDead naming the cause", c.startErr)
	}
}
