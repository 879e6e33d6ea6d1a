//go:build linux

package terminal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

func TestKillThenOutputWaitRelease(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "echo before; sleep 30; echo after"})
	// Subscribing to the terminal replays what it wrote so far.
	sub, err := m.Subscribe(info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	nextOutput(t, sub)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	out := mustOutput(t, m, info)
	want := ExitStatus{Signal: sig("SIGTERM")}
	if out.ExitStatus == nil {
		t.Fatal("no exit status after kill")
	}
	wantStatus(t, *out.ExitStatus, want)
	if out.Text != "before\n" {
		t.Errorf("output %q", out.Text)
	}
	wantStatus(t, mustWait(t, m, info), want)
	// Kill again, on an exited command: a no-op.
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), want)
	mustRelease(t, m, info)
	_, err = m.Output(testCtx(t), info.SessionID, info.TerminalID)
	wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	m := newTestManager(t, &Options{KillGrace: 100 * time.Millisecond})
	sub, _ := m.Subscribe("", "")
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "trap '' TERM; echo trapped; sleep 30"})
	nextOutput(t, sub)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{Signal: sig("SIGKILL")})
	mustRelease(t, m, info)
}

func TestKillExitedIsNoop(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "exit 4"})
	mustWait(t, m, info)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(4)})
	mustRelease(t, m, info)
}

func TestConcurrentWaiters(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	const n = 20
	results := make(chan ExitStatus, n)
	var waiting sync.WaitGroup
	m.waiting = waiting.Done
	for range n {
		waiting.Add(1)
		go func() {
			st, err := m.Wait(testCtx(t), info.SessionID, info.TerminalID)
			if err != nil {
				t.Error(err)
			}
			results <- st
		}()
	}
	waiting.Wait() // every Wait is blocked
	m.waiting = nil
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	for range n {
		wantStatus(t, <-results, ExitStatus{Signal: sig("SIGTERM")})
	}
	mustRelease(t, m, info)
}

func TestCancelledWaitLeavesProcessRunning(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Wait(ctx, info.SessionID, info.TerminalID)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if !alive(info.PID) {
		t.Fatal("cancelled wait killed the command")
	}
	if out := mustOutput(t, m, info); out.ExitStatus != nil {
		t.Fatalf("status %v after a cancelled wait", out.ExitStatus)
	}
	mustRelease(t, m, info)
}

func TestReleaseResolvesPendingWaits(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	results := make(chan ExitStatus, 3)
	var waiting sync.WaitGroup
	m.waiting = waiting.Done
	for range 3 {
		waiting.Add(1)
		go func() {
			st, err := m.Wait(testCtx(t), info.SessionID, info.TerminalID)
			if err != nil {
				t.Error(err)
			}
			results <- st
		}()
	}
	waiting.Wait() // every Wait is blocked
	m.waiting = nil
	mustRelease(t, m, info)
	for range 3 {
		wantStatus(t, <-results, ExitStatus{Signal: sig("SIGTERM")})
	}
}

func TestUnknownReleasedAndForeignTerminals(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	ctx := testCtx(t)
	calls := map[string]func(sid acp.SessionID, tid acp.TerminalID) error{
		"output":  func(sid acp.SessionID, tid acp.TerminalID) error { _, err := m.Output(ctx, sid, tid); return err },
		"wait":    func(sid acp.SessionID, tid acp.TerminalID) error { _, err := m.Wait(ctx, sid, tid); return err },
		"kill":    func(sid acp.SessionID, tid acp.TerminalID) error { return m.Kill(ctx, sid, tid) },
		"release": func(sid acp.SessionID, tid acp.TerminalID) error { return m.Release(ctx, sid, tid) },
	}
	for name, call := range calls {
		unknown := call("nobody", info.TerminalID)
		foreign := call("s2", info.TerminalID)
		wantCode(t, unknown, ErrNotFound, acp.CodeInvalidParams)
		wantCode(t, foreign, ErrNotFound, acp.CodeInvalidParams)
		if unknown.Error() != foreign.Error() || !strings.Contains(foreign.Error(), string(info.TerminalID)) {
			t.Errorf("%s: unknown %q vs foreign %q: want the same message naming the terminal", name, unknown, foreign)
		}
	}
	if out := mustOutput(t, m, info); out.ExitStatus != nil {
		t.Fatal("another session's calls touched the terminal")
	}
	mustRelease(t, m, info)
	for name, call := range calls {
		err := call(info.SessionID, info.TerminalID)
		wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
		if want := call("nobody", info.TerminalID).Error(); err.Error() != want {
			t.Errorf("%s after release: %q, want %q", name, err, want)
		}
	}
}

func TestReleaseTwice(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "true"})
	mustRelease(t, m, info)
	err := m.Release(testCtx(t), info.SessionID, info.TerminalID)
	wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
}
