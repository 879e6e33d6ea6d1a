//go:build linux

package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proc/proctest"
)

func TestBackgroundChildDoesNotDelayWait(t *testing.T) {
	m := newTestManager(t, nil)
	start := time.Now()
	info := mustCreate(t, m, Request{Command: "sleep 30 & echo $!; echo started"})
	st := mustWait(t, m, info)
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("wait took %v although the shell exited at once", d)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	pid, text, _ := strings.Cut(out.Text, "\n")
	if text != "started\n" {
		t.Fatalf("output %q", out.Text)
	}
	pids := parsePIDs(t, pid)
	if !alive(pids[0]) {
		t.Fatal("background sleep died before release")
	}
	mustRelease(t, m, info)
	waitDead(t, pids[0])
}

// The drain ends when the pipe is empty, not at DrainTimeout: with a
// 30 s window, a background sleep holding the pipe must not delay the
// status, and what the shell and the pipeline it waited for wrote (more
// than a pipe buffer) must all be there.
func TestDrainEndsWhenPipeEmpty(t *testing.T) {
	const window = 30 * time.Second
	m := newTestManager(t, &Options{DrainTimeout: window})
	const n = 200000
	info := mustCreate(t, m, Request{Command: fmt.Sprintf(
		`sleep 30 & echo $!; head -c %d /dev/zero | tr '\0' a; echo; echo end`, n)})
	// Half the window: a wait that waited for the window, or for the
	// sleep, fails here instead of passing late.
	ctx, cancel := context.WithTimeout(context.Background(), window/2)
	defer cancel()
	st, err := m.Wait(ctx, info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatalf("Wait with a %v drain window: %v (it waited for the background sleep)", window, err)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	pidLine, rest, _ := strings.Cut(out.Text, "\n")
	if want := strings.Repeat("a", n) + "\nend\n"; rest != want {
		t.Errorf("output after the pid: %d bytes ending %q, want %d ending %q",
			len(rest), rest[max(0, len(rest)-8):], len(want), want[len(want)-8:])
	}
	pid := parsePIDs(t, pidLine)[0]
	mustRelease(t, m, info)
	waitDead(t, pid)
}

// A descendant that never stops writing must not keep the reader, and so
// the status, waiting: reading stops at the drain deadline even though
// the pipe may never run dry. The background job writes more than the
// limit before the shell may exit (the file "started" says so), so that
// output is in the pipe and must be captured; what yes writes afterwards
// need not be.
func TestWritingDescendantDoesNotDelayWait(t *testing.T) {
	m := newTestManager(t, nil)
	dir := t.TempDir()
	limit := uint64(4096)
	info := mustCreate(t, m, Request{
		Command: "{ yes spam | head -c 8192; touch started; exec yes spam; } & echo $! > pid; " +
			"while [ ! -e started ]; do :; done; echo started",
		Cwd:             dir,
		OutputByteLimit: &limit,
	})
	start := time.Now()
	st := mustWait(t, m, info)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait took %v with a %v drain timeout", d, DefaultDrainTimeout)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	if !out.Truncated || !strings.Contains(out.Text, "spam\nspam\n") {
		t.Fatalf("output truncated=%v ending %q", out.Truncated, out.Text[max(0, len(out.Text)-20):])
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := parsePIDs(t, strings.TrimSpace(string(b)))[0]
	if !alive(pid) {
		t.Fatal("background yes died before release")
	}
	mustRelease(t, m, info)
	waitDead(t, pid)
}

// daemonCmd double-forks a sleep into a new session (out of the process
// group) and prints its PID; the sleep keeps the output pipe open.
const daemonCmd = `setsid sh -c 'sleep 300 & echo $!' & wait; echo done`

func TestNoDescendantSurvivesRelease(t *testing.T) {
	for _, iso := range []Isolation{IsolationAuto, IsolationProcScan} {
		t.Run(iso.String(), func(t *testing.T) {
			m := newTestManager(t, &Options{Isolation: iso})
			if iso == IsolationAuto {
				if m.Isolation() != IsolationCgroup {
					t.Skipf("no writable cgroup v2 here (isolation %s)", m.Isolation())
				}
			} else if m.Isolation() != iso {
				t.Fatalf("isolation %s, want %s", m.Isolation(), iso)
			}
			info := mustCreate(t, m, Request{Command: daemonCmd})
			mustWait(t, m, info)
			out := mustOutput(t, m, info)
			pidStr, rest, _ := strings.Cut(out.Text, "\n")
			if rest != "done\n" {
				t.Fatalf("output %q", out.Text)
			}
			pid := parsePIDs(t, pidStr)[0]
			if !alive(pid) {
				t.Fatal("daemon died before release")
			}
			if sid := sessionOf(t, pid); sid == info.PID {
				t.Fatalf("daemon still in the terminal's session %d", sid)
			}
			mustRelease(t, m, info)
			waitDead(t, pid)
		})
	}
}

// sessionOf reads the session ID of pid from /proc.
func sessionOf(t *testing.T, pid int) int {
	st, ok := proctest.ReadStat(pid)
	if !ok {
		t.Fatalf("no process %d", pid)
	}
	return st.Session
}

func TestPerSessionLimit(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{MaxTerminalsPerSession: 2}})
	a := mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	_, err := m.Create(testCtx(t), Request{SessionID: "s1", Command: "true"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !strings.Contains(err.Error(), "limit") {
		t.Errorf("error %q does not say it is the limit", err)
	}
	mustCreate(t, m, Request{SessionID: "s2", Command: "true"}) // other sessions unaffected
	// Exited but unreleased terminals still count.
	mustRelease(t, m, a)
	mustCreate(t, m, Request{SessionID: "s1", Command: "true"})
}

// Sessions are the agent's to name: the bound of all sessions together
// holds however many it makes up, and a refused or released create gives
// its place back.
func TestTotalLimit(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{MaxTerminals: 2, Decide: func(_ context.Context, info Info) Decision {
		if info.Command == "refused" {
			return Deny("no")
		}
		return Allow()
	}}})
	a := mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	if _, err := m.Create(testCtx(t), Request{SessionID: "s2", Command: "refused"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("refused create: %v", err)
	}
	mustCreate(t, m, Request{SessionID: "s2", Command: "sleep 30"})
	_, err := m.Create(testCtx(t), Request{SessionID: "s3", Command: "true"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !strings.Contains(err.Error(), "limit of all sessions") {
		t.Errorf("error %q does not say it is the limit of all sessions", err)
	}
	mustRelease(t, m, a)
	mustCreate(t, m, Request{SessionID: "s3", Command: "true"})
}

func TestTimeout(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{Timeout: 100 * time.Millisecond}})
	sub, _ := m.Subscribe("", "")
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	want := ExitStatus{Signal: sig("SIGTERM")}
	wantStatus(t, mustWait(t, m, info), want)
	if out := mustOutput(t, m, info); !out.TimedOut {
		t.Errorf("Output.TimedOut = false after the timeout killed the command")
	}
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventExited {
			wantStatus(t, *ev.Status, want)
			if !ev.TimedOut {
				t.Errorf("EventExited.TimedOut = false after the timeout killed the command")
			}
			break
		}
	}
	// A command that finishes in time is not marked.
	out, st := runTerminal(t, m, Request{Command: "true"})
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	if out.TimedOut {
		t.Errorf("Output.TimedOut = true for a command that finished in time")
	}
	mustRelease(t, m, info)
}

func TestDecide(t *testing.T) {
	var seen []Info
	var mu sync.Mutex
	blocked := make(chan struct{})
	m := newTestManager(t, &Options{Policy: &Policy{
		Decide: func(ctx context.Context, info Info) Decision {
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
			switch {
			case strings.HasPrefix(info.Command, "rm"):
				return Deny("rm is not allowed here")
			case info.Command == "block":
				close(blocked)
				<-ctx.Done() // like a permission prompt the agent cancels
			}
			return Allow()
		},
		MaxTerminalsPerSession: 1,
	}})
	_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "rm -rf x"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !strings.Contains(err.Error(), "rm is not allowed here") {
		t.Errorf("error %q lacks the reason", err)
	}
	// A cancelled create (the agent's $/cancel_request) starts nothing.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Create(ctx, Request{SessionID: "s", Command: "block"})
		errc <- err
	}()
	<-blocked
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled create: %v", err)
	}
	// Neither left a slot taken (the limit is 1).
	info := mustCreate(t, m, Request{SessionID: "s", Command: "echo", Args: []string{"ok"}})
	mustRelease(t, m, info)
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.Cwd == "" || !filepath.IsAbs(last.Argv[0]) || last.TerminalID != "" {
		t.Errorf("Decide saw %+v; want resolved cwd and argv, no ID yet", last)
	}
}

func TestManyConcurrentTerminals(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 50
	}
	m := newTestManager(t, &Options{Policy: &Policy{MaxTerminalsPerSession: n}})
	infos := make([]Info, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "echo", Args: []string{fmt.Sprint(i)}})
			if err != nil {
				t.Error(err)
				return
			}
			infos[i] = info
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if got := len(m.Terminals("s")); got != n {
		t.Errorf("%d live terminals, want %d", got, n)
	}
	ids := map[acp.TerminalID]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := infos[i]
			st := mustWait(t, m, info)
			out := mustOutput(t, m, info)
			if out.Text != fmt.Sprintln(i) || !statusEq(st, ExitStatus{ExitCode: code(0)}) {
				t.Errorf("terminal %d: %q, %v", i, out.Text, st)
			}
			mustRelease(t, m, info)
		}()
		ids[infos[i].TerminalID] = true
	}
	wg.Wait()
	if len(ids) != n {
		t.Errorf("%d distinct IDs for %d terminals", len(ids), n)
	}
	if got := len(m.Terminals("s")); got != 0 {
		t.Errorf("%d terminals left", got)
	}
}
