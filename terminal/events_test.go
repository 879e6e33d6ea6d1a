//go:build linux

package terminal

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// collect reads a subscription until it has seen the Released event of
// terminalID.
func collect(t *testing.T, sub *Subscription, terminalID string) []Event {
	t.Helper()
	var evs []Event
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatalf("Next: %v (after %d events)", err, len(evs))
		}
		if ev.TerminalID != terminalID {
			continue
		}
		evs = append(evs, ev)
		if ev.Kind == EventReleased {
			return evs
		}
	}
}

func kinds(evs []Event) []EventKind {
	var ks []EventKind
	for _, ev := range evs {
		if len(ks) == 0 || ks[len(ks)-1] != ev.Kind {
			ks = append(ks, ev.Kind)
		}
	}
	return ks
}

func TestEventsOfATerminal(t *testing.T) {
	m := newTestManager(t, nil)
	all, err := m.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	other, _ := m.Subscribe("other", "")
	defer other.Close()

	info := mustCreate(t, m, Request{Command: "printf", Args: []string{"%s\n", "one", "two"}, Env: []EnvVar{{"X", "1"}}})
	mustWait(t, m, info)
	mustRelease(t, m, info)
	evs := collect(t, all, info.TerminalID)

	if got, want := kinds(evs), []EventKind{EventCreated, EventOutput, EventExited, EventReleased}; !slices.Equal(got, want) {
		t.Fatalf("event kinds %v, want %v", got, want)
	}
	ci := evs[0].Info
	if ci == nil || ci.Command != "printf" || !slices.Equal(ci.Args, info.Args) || ci.Cwd != info.Cwd || ci.PID != info.PID {
		t.Errorf("Created info %+v, want %+v", ci, info)
	}
	var out strings.Builder
	for _, ev := range evs {
		out.Write(ev.Data)
		if ev.Dropped != 0 {
			t.Errorf("%v event dropped %d bytes", ev.Kind, ev.Dropped)
		}
	}
	if out.String() != "one\ntwo\n" {
		t.Errorf("output events %q", out.String())
	}
	for _, ev := range evs[len(evs)-2:] {
		if ev.Status == nil || !statusEq(*ev.Status, ExitStatus{ExitCode: code(0)}) {
			t.Errorf("%v status %v", ev.Kind, ev.Status)
		}
	}
	// A subscription to another session saw nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ev, err := other.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("other session's subscription got %v, %v", ev, err)
	}
}

func TestTerminalSubscriptionReplays(t *testing.T) {
	m := newTestManager(t, nil)
	all, _ := m.Subscribe("", "")
	defer all.Close()
	info := mustCreate(t, m, Request{Command: "echo early; exec sleep 30"})
	// Wait until the early output was read, then subscribe late.
	nextOutput(t, all)
	sub, err := m.Subscribe(info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, m, info)
	evs := collect(t, sub, info.TerminalID)
	if got, want := kinds(evs), []EventKind{EventCreated, EventOutput, EventExited, EventReleased}; !slices.Equal(got, want) {
		t.Fatalf("event kinds %v, want %v", got, want)
	}
	if string(evs[1].Data) != "early\n" {
		t.Errorf("replayed output %q", evs[1].Data)
	}
	// The subscription ends with its terminal.
	if _, err := sub.Next(testCtx(t)); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("after Released: %v", err)
	}
	// Unknown terminals cannot be subscribed to.
	_, err = m.Subscribe(info.SessionID, info.TerminalID)
	wantCode(t, err, ErrNotFound, CodeInvalidParams)
}

func TestSlowSubscriberGetsGapsAndDoesNotStall(t *testing.T) {
	const total = 4 << 20
	m := newTestManager(t, &Options{SubscriberBuffer: 64 << 10})
	slow, _ := m.Subscribe("", "")
	defer slow.Close()
	// Nobody reads slow while the command writes 64 times its buffer.
	info := mustCreate(t, m, Request{Command: "head -c 4194304 /dev/zero"})
	mustWait(t, m, info)
	if out := mustOutput(t, m, info); len(out.Text) != total {
		t.Fatalf("captured %d bytes", len(out.Text))
	}
	mustRelease(t, m, info)
	var got, dropped uint64
	for _, ev := range collect(t, slow, info.TerminalID) {
		got += uint64(len(ev.Data))
		dropped += ev.Dropped
	}
	if got+dropped != total || dropped == 0 || got > 64<<10 {
		t.Errorf("delivered %d + dropped %d, want %d in all with gaps", got, dropped, total)
	}
}

func TestSnapshotAfterRelease(t *testing.T) {
	m := newTestManager(t, &Options{RetainBytes: 1})
	first := mustCreate(t, m, Request{Command: "echo first"})
	mustWait(t, m, first)
	if s, err := m.Snapshot(first.SessionID, first.TerminalID); err != nil || s.Released || s.Text != "first\n" {
		t.Fatalf("live snapshot %+v, %v", s, err)
	}
	mustRelease(t, m, first)
	s, err := m.Snapshot(first.SessionID, first.TerminalID)
	if err != nil || !s.Released || s.Text != "first\n" || s.ExitStatus == nil || s.Command != "echo first" {
		t.Fatalf("released snapshot %+v, %v", s, err)
	}
	// The protocol has forgotten it.
	_, err = m.Output(testCtx(t), first.SessionID, first.TerminalID)
	wantCode(t, err, ErrNotFound, CodeInvalidParams)
	// Retention is bounded: the newest release evicts the oldest.
	second := mustCreate(t, m, Request{Command: "echo second"})
	mustWait(t, m, second)
	mustRelease(t, m, second)
	if _, err := m.Snapshot(first.SessionID, first.TerminalID); err == nil {
		t.Error("first snapshot still retained beyond RetainBytes")
	}
	if s, err := m.Snapshot(second.SessionID, second.TerminalID); err != nil || s.Text != "second\n" {
		t.Errorf("second snapshot %+v, %v", s, err)
	}
}

func TestSubscriptionClose(t *testing.T) {
	m := newTestManager(t, nil)
	sub, _ := m.Subscribe("", "")
	sub.Close()
	sub.Close()
	if _, err := sub.Next(testCtx(t)); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("Next after Close: %v", err)
	}
	_, _ = runTerminal(t, m, Request{Command: "echo x"}) // nothing delivered, nothing blocks
}
