//go:build linux

package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

func TestReleaseSession(t *testing.T) {
	m := newTestManager(t, nil)
	a := mustCreate(t, m, Request{SessionID: "a", Command: "sleep 30"})
	a2 := mustCreate(t, m, Request{SessionID: "a", Command: "true"})
	b := mustCreate(t, m, Request{SessionID: "b", Command: "sleep 30"})
	_ = m.ReleaseSession(context.Background(), "a")
	waitDead(t, a.PID)
	for _, info := range []Info{a, a2} {
		_, err := m.Output(testCtx(t), info.SessionID, info.TerminalID)
		wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
	}
	if !alive(b.PID) {
		t.Fatal("another session's terminal was killed")
	}
	mustRelease(t, m, b)
}

func TestCloseKillsEverything(t *testing.T) {
	m := NewManager(&Options{DefaultCwd: t.TempDir()})
	sub, err := m.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, sid := range []acp.SessionID{"a", "b"} {
		for range 3 {
			pids = append(pids, mustCreate(t, m, Request{SessionID: sid, Command: "sleep 30"}).PID)
		}
	}
	d := mustCreate(t, m, Request{SessionID: "a", Command: daemonCmd})
	// The daemon's PID is the first line; wait for it through events.
	var daemonOut string
	for !strings.Contains(daemonOut, "\n") {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.TerminalID == d.TerminalID {
			daemonOut += string(ev.Data)
		}
	}
	pids = append(pids, parsePIDs(t, strings.SplitN(daemonOut, "\n", 2)[0])...)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		waitDead(t, pid)
	}
	_, err = m.Create(testCtx(t), Request{SessionID: "a", Command: "true"})
	wantCode(t, err, ErrClosed, acp.CodeInternalError)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The subscription saw every release, then ends.
	released := 0
	for {
		ev, err := sub.Next(testCtx(t))
		if errors.Is(err, ErrSubscriptionClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventReleased {
			released++
		}
	}
	if released != 7 {
		t.Errorf("%d Released events, want 7", released)
	}
}

func TestDefaultShell(t *testing.T) {
	for _, tt := range []struct{ shell, want string }{
		{"/bin/bash", "/bin/bash"},
		{"/bin/dash", "/bin/dash"},
		{"/usr/bin/fish", "/bin/sh"},
		{"/bin/csh", "/bin/sh"},
		{"bash", "/bin/sh"},          // not absolute
		{"/no/such/bash", "/bin/sh"}, // not there
		{"", "/bin/sh"},
	} {
		t.Setenv("SHELL", tt.shell)
		if got := DefaultShell(); got != tt.want {
			t.Errorf("SHELL=%q: DefaultShell() = %q, want %q", tt.shell, got, tt.want)
		}
	}
	if got := shellArgv("/bin/busybox"); !slices.Equal(got, []string{"/bin/busybox", "sh"}) {
		t.Errorf("busybox argv %q", got)
	}
}

func TestCgroupPlacement(t *testing.T) {
	m := newTestManager(t, nil)
	if m.Isolation() != IsolationCgroup {
		t.Skipf("isolation %s", m.Isolation())
	}
	out, _ := runTerminal(t, m, Request{Command: "cat", Args: []string{"/proc/self/cgroup"}})
	if !strings.Contains(out.Text, "0::") {
		t.Fatalf("no cgroup v2 line in %q", out.Text)
	}
	var line string
	for _, l := range strings.Split(out.Text, "\n") {
		if strings.HasPrefix(l, "0::") {
			line = l
		}
	}
	if !regexp.MustCompile(`/acpterm-\d+-\d+-terms-[0-9a-f]{8}/term_[0-9a-f]{16}$`).MatchString(line) {
		t.Errorf("command ran in cgroup %q, want the terminal's own", line)
	}
}

func TestIsolationGroupKeepsBackgroundJobsUntilRelease(t *testing.T) {
	m := newTestManager(t, &Options{Isolation: IsolationGroup})
	if m.Isolation() != IsolationGroup {
		t.Fatalf("isolation %s", m.Isolation())
	}
	info := mustCreate(t, m, Request{Command: "sleep 30 >/dev/null & echo $!"})
	mustWait(t, m, info)
	pid := parsePIDs(t, mustOutput(t, m, info).Text)[0]
	if !alive(pid) {
		t.Fatal("background job died with its shell")
	}
	mustRelease(t, m, info)
	waitDead(t, pid)
}

func TestCloseWhileBusy(t *testing.T) {
	m := NewManager(&Options{DefaultCwd: t.TempDir(), KillGrace: 100 * time.Millisecond})
	var (
		mu   sync.Mutex
		pids []int
		wg   sync.WaitGroup
	)
	created := make(chan struct{}, 100)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := acp.SessionID(fmt.Sprint("s", g%2))
			for {
				info, err := m.Create(testCtx(t), Request{SessionID: sid, Command: "sleep 30"})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pids = append(pids, info.PID)
				mu.Unlock()
				select {
				case created <- struct{}{}:
				default:
				}
				if err := m.Release(testCtx(t), sid, info.TerminalID); err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
				}
			}
		}()
	}
	for range 10 {
		<-created
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, pid := range pids {
		waitDead(t, pid)
	}
	if dir := m.iso.dir; dir != "" {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("manager cgroup %s left behind: %v", dir, err)
		}
	}
}

func TestStaleCgroupsOfDeadHostsAreCleaned(t *testing.T) {
	parent, err := ownCgroupDir()
	if err != nil {
		t.Skip(err)
	}
	probe := NewManager(nil)
	usable := probe.Isolation() == IsolationCgroup
	probe.Close()
	if !usable {
		t.Skip("no writable cgroup v2")
	}
	// A host that died: its PID is gone, its cgroup holds a live process.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("acpterm-%d-deadbeef", dead.Process.Pid))
	termDir := filepath.Join(stale, "term_0000000000000000")
	if err := os.MkdirAll(termDir, 0o755); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "30")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Wait()
	if err := os.WriteFile(filepath.Join(termDir, "cgroup.procs"), []byte(fmt.Sprint(orphan.Process.Pid)), 0); err != nil {
		orphan.Process.Kill()
		t.Fatal(err)
	}
	m := NewManager(nil)
	defer m.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s still there: %v", stale, err)
	}
	waitDead(t, orphan.Process.Pid)
}
