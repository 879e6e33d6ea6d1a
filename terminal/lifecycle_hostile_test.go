//go:build linux

package terminal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
	"golang.org/x/sys/unix"
)

// zombieLeaderScript forks a child that leaves the terminal's session and
// process group, and ends its main thread alone (pthread_exit) while a
// second thread runs on. Its thread-group leader is then a zombie, and
// /proc/PID/environ, which reads the leader's memory map, fails: a scan
// of /proc/*/environ alone does not see the marker. The second thread
// joins the main one before it hands the parent the child's PID, which
// the parent prints before it exits.
const zombieLeaderScript = `
import ctypes, os, threading, time
libc = ctypes.CDLL(None)
libc.pthread_self.restype = ctypes.c_ulong
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    main = libc.pthread_self()
    def run():
        libc.pthread_join(ctypes.c_ulong(main), None)
        os.write(w, str(os.getpid()).encode())
        time.sleep(300)
    threading.Thread(target=run).start()
    libc.pthread_exit(None)
os.close(w)
print(os.read(r, 32).decode(), flush=True)
`

// A descendant whose main thread has exited while another thread runs
// keeps its environment, marker included, in the memory its threads
// share: the /proc scan must find it through a live thread and kill it.
func TestProcScanKillsProcessWithZombieLeader(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	m := newTestManager(t, &Options{Isolation: IsolationProcScan})
	if m.Isolation() != IsolationProcScan {
		t.Fatalf("isolation %s, want %s", m.Isolation(), IsolationProcScan)
	}
	info := mustCreate(t, m, Request{Command: python, Args: []string{"-c", zombieLeaderScript}})
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	pid := parsePIDs(t, strings.TrimSpace(out.Text))[0]

	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
		unix.Close(pfd)
	})
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil && len(env) > 0 {
		t.Fatalf("/proc/%d/environ is readable with the main thread gone: the test proves nothing", pid)
	}

	mustRelease(t, m, info)
	if err := proctest.WaitExit([]int{pid}, 5*time.Second); err != nil {
		t.Fatalf("a process of the released terminal runs on with its main thread gone: %v", err)
	}
}

// A create still waiting (in Policy.Decide) when its session is released
// gets no terminal: its command would otherwise run on in a session that
// has ended, until the manager's Close.
func TestCreateAcrossReleaseSession(t *testing.T) {
	entered, answer := make(chan struct{}), make(chan struct{})
	m := newTestManager(t, &Options{Policy: &Policy{Decide: func(ctx context.Context, info Info) Decision {
		if info.Command == "sleep 30" {
			close(entered)
			<-answer
		}
		return Allow()
	}}})
	errc := make(chan error, 1)
	go func() {
		_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "sleep 30"})
		errc <- err
	}()
	<-entered
	_ = m.ReleaseSession(context.Background(), "s")
	close(answer)
	err := <-errc
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "released") {
		t.Fatalf("create across ReleaseSession: %v, want ErrClosed saying the session was released", err)
	}
	if live := m.Terminals("s"); len(live) != 0 {
		t.Fatalf("terminals of the released session: %+v", live)
	}
	// The session's name can be used again.
	info := mustCreate(t, m, Request{SessionID: "s", Command: "true"})
	mustWait(t, m, info)
	mustRelease(t, m, info)
}
