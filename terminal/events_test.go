//go:build linux

package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/acpterm/acpterm/acp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// collect reads a subscription until it has seen the Released event of
// terminalID. The events keep copies of their data.
func collect(t *testing.T, sub Events, terminalID acp.TerminalID) []Event {
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
		ev.Data = bytes.Clone(ev.Data)
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
	// A terminal whose output nobody read before its release: the
	// final output is rendered when asked for.
	third := mustCreate(t, m, Request{Command: "printf 'third\\377'; exit 3"})
	mustWait(t, m, third)
	mustRelease(t, m, third)
	s, err = m.Snapshot(third.SessionID, third.TerminalID)
	if err != nil || !s.Released || s.Text != "third\uFFFD" || s.ExitStatus == nil || s.ExitStatus.String() != "exit 3" {
		t.Errorf("third snapshot %+v, %v", s, err)
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

// TestSubscriptionStreamsInOrder: however the reads of a command's output
// are grouped into events, and while each event's buffer is reused after
// the next call to Next, a subscriber that uses Data before that call sees
// every byte once, in order.
func TestSubscriptionStreamsInOrder(t *testing.T) {
	// A buffer larger than the output: a busy machine may delay the
	// reader here, but nothing may be dropped.
	m := newTestManager(t, &Options{SubscriberBuffer: 4 << 20})
	sub, _ := m.Subscribe("", "")
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "seq 1 200000"})
	var got bytes.Buffer
	for done := false; !done; {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Dropped != 0 {
			t.Fatalf("dropped %d bytes", ev.Dropped)
		}
		got.Write(ev.Data)
		done = ev.Kind == EventExited
	}
	mustRelease(t, m, info)
	var want bytes.Buffer
	for i := 1; i <= 200000; i++ {
		fmt.Fprintln(&want, i)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("got %d bytes, want the %d of seq", got.Len(), want.Len())
	}
}

// deliverOutput hands a subscription a chunk of a terminal's output, as
// the terminal's reader does.
func deliverOutput(e Events, sessionID acp.SessionID, terminalID acp.TerminalID, data string) {
	s := e.(*Subscription)
	s.deliver(Event{Kind: EventOutput, SessionID: sessionID, TerminalID: terminalID, Data: []byte(data)},
		termKey(sessionID, terminalID))
}

func wantEvent(t *testing.T, sub Events, kind EventKind, terminalID acp.TerminalID, data string, dropped uint64) {
	t.Helper()
	ev, err := sub.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != kind || ev.TerminalID != terminalID || string(ev.Data) != data || ev.Dropped != dropped {
		t.Fatalf("got %v %s %q dropped %d, want %v %s %q dropped %d",
			ev.Kind, ev.TerminalID, ev.Data, ev.Dropped, kind, terminalID, data, dropped)
	}
}

// TestSubscriptionMergesOutput: output queued while the subscriber is busy
// is merged into one event per run of one terminal's output; another
// terminal's output, another kind of event or a gap starts a new one.
func TestSubscriptionMergesOutput(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: 16})
	sub, _ := m.subscribeWide("")
	defer sub.Close()
	deliverOutput(sub, "s", "a", "one ")
	deliverOutput(sub, "s", "a", "two")
	deliverOutput(sub, "s", "b", "b1")
	deliverOutput(sub, "s", "a", "xx") // a is not the last queued: no merge
	wantEvent(t, sub, EventOutput, "a", "one two", 0)
	deliverOutput(sub, "s", "a", "3")            // merges with the queued "xx"
	deliverOutput(sub, "s", "a", "far too much") // does not fit: dropped
	deliverOutput(sub, "s", "a", "y")            // after a gap: its own event
	deliverOutput(sub, "s", "a", "z")
	sub.deliver(Event{Kind: EventExited, SessionID: "s", TerminalID: "a", Status: &ExitStatus{}}, termKey("s", "a"))
	deliverOutput(sub, "s", "a", "after")
	wantEvent(t, sub, EventOutput, "b", "b1", 0)
	wantEvent(t, sub, EventOutput, "a", "xx3", 0)
	wantEvent(t, sub, EventOutput, "a", "yz", 12)
	wantEvent(t, sub, EventExited, "a", "", 0)
	wantEvent(t, sub, EventOutput, "a", "after", 0)
	// Buffers are reused once the subscriber has moved on.
	deliverOutput(sub, "s", "a", "again")
	wantEvent(t, sub, EventOutput, "a", "again", 0)
}

// TestSubscriptionWakesForOutput: a subscriber waiting in Next gets output
// without more events behind it, whether it is a little (the timer) or a
// quarter of the buffer (at once).
func TestSubscriptionWakesForOutput(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: 64})
	sub, _ := m.subscribeWide("")
	defer sub.Close()
	ctx := testCtx(t)
	for _, data := range []string{"x", strings.Repeat("q", 16), "y"} {
		got := make(chan string, 1)
		go func() {
			ev, _ := sub.Next(ctx)
			got <- string(ev.Data)
		}()
		// Deliver once Next waits, so that it has to be woken.
		for waiting := false; !waiting; {
			if ctx.Err() != nil {
				t.Fatal("Next never waited")
			}
			runtime.Gosched()
			sub.mu.Lock()
			waiting = sub.waiting
			sub.mu.Unlock()
		}
		deliverOutput(sub, "s", "a", data)
		if ev := <-got; ev != data {
			t.Fatalf("woken with %q, want %q", ev, data)
		}
	}
}
