//go:build unix

package remote_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// The lossless tests keep every buffer small against the output, so that
// a stream that drops would drop most of it.
const (
	testWindow    = 256 << 10
	testSubBuffer = 64 << 10
)

func losslessServe(t *testing.T) *served {
	t.Helper()
	return serve(t, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: t.TempDir(), SubscriberBuffer: testSubBuffer}},
		&remote.ClientOptions{Window: testWindow, SubscriberBuffer: testSubBuffer})
}

// testData writes a file of n bytes (text or random binary) and returns
// its path and contents.
func testData(t *testing.T, n int, text bool) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	if text {
		line := []byte("\x1b[32mok\x1b[0m  github.com/acpterm/acpterm/remote \"quoted\" tab\there ünïcödé\n")
		for i := range data {
			data[i] = line[i%len(line)]
		}
	} else {
		_, _ = rand.Read(data)
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// stillRunning reports whether the command is still running after d: the
// only way to see that something blocks is to give it time not to.
func stillRunning(t *testing.T, c *remote.Client, sid acp.SessionID, id acp.TerminalID, d time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: sid, TerminalID: id})
	return errors.Is(err, context.DeadlineExceeded)
}

// readAll takes a terminal's events up to its exit and returns its
// output; slow makes a round trip to the server after every event, a
// subscriber slower than the command. The round trip asks for a terminal
// that does not exist: terminal/output of this one would carry its whole
// retained output every time, megabytes per event, which under -race
// took most of a minute and tested nothing more.
func readAll(t *testing.T, c *remote.Client, sub terminal.Events, id acp.TerminalID, slow bool) (data []byte, dropped uint64, maxHeld int) {
	t.Helper()
	ctx := testCtx(t)
	for {
		maxHeld = max(maxHeld, sub.(*remote.Subscription).Held())
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d bytes: %v", len(data), err)
		}
		if ev.TerminalID != id {
			continue
		}
		data = append(data, ev.Data...)
		dropped += ev.Dropped
		if ev.Kind == terminal.EventExited {
			return data, dropped, maxHeld
		}
		if slow {
			roundTrip(t, c)
		}
	}
}

// A lossless stream delivers every byte of an output far larger than
// every buffer on the way, in order, to a subscriber slower than the
// command, text and binary alike; the command waits for it, and the
// subscriber never holds more than the window.
func TestLosslessSlowReader(t *testing.T) {
	t.Parallel()
	for _, text := range []bool{true, false} {
		name := map[bool]string{true: "text", false: "binary"}[text]
		t.Run(name, func(t *testing.T) {
			s := losslessServe(t)
			sub, err := s.c.SubscribeHeld("", "")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			path, want := testData(t, 8<<20, text)
			limit := uint64(1000) // the tail cannot make up for anything
			id := create(t, s.c, &acp.CreateTerminalRequest{Command: "cat", Args: []string{path}, OutputByteLimit: &limit})
			if !stillRunning(t, s.c, "s", id, 300*time.Millisecond) {
				t.Fatal("the command ran to its end while the lossless subscriber read nothing")
			}
			got, dropped, maxHeld := readAll(t, s.c, sub, id, true)
			if dropped != 0 || !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes (%d dropped), want %d; equal prefix: %v", len(got), dropped, len(want), bytes.HasPrefix(want, got))
			}
			if maxHeld > testWindow {
				t.Errorf("the subscriber held %d bytes, over the window of %d", maxHeld, testWindow)
			}
			if st := exitOf(t, s.c, id); st.String() != "exit 0" {
				t.Errorf("status %v", st)
			}
		})
	}
}

// Without a lossless subscriber the stream is as it always was: the
// command never waits, and a subscriber that lags loses output, counted.
func TestDefaultStreamDropsAndNeverWaits(t *testing.T) {
	t.Parallel()
	s := losslessServe(t)
	sub, err := s.c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	path, want := testData(t, 8<<20, false)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "cat", Args: []string{path}})
	exitOf(t, s.c, id) // nobody has read anything
	got, dropped, _ := readAll(t, s.c, sub, id, false)
	if dropped == 0 || uint64(len(got))+dropped != uint64(len(want)) {
		t.Errorf("got %d bytes, dropped %d, of %d", len(got), dropped, len(want))
	}
}

// A lossless subscriber that stops reading stalls its own terminals'
// commands, nothing else: the connection answers, a terminal of another
// session runs to its end and streams to an ordinary subscriber, and the
// held terminal is killed, waited for and released as any other.
// Closing the connection then ends everything at once (the dead-man rule).
func TestLosslessStalledReader(t *testing.T) {
	t.Parallel()
	s := losslessServe(t)
	stalled, err := s.c.SubscribeHeld("s", "")
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	other, err := s.c.Subscribe("t", "")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := testCtx(t)
	var ids []acp.TerminalID
	for range 2 {
		ids = append(ids, create(t, s.c, &acp.CreateTerminalRequest{Command: "yes"}))
	}
	if !stillRunning(t, s.c, "s", ids[0], 100*time.Millisecond) {
		t.Fatal("yes exited")
	}
	// Another session's terminal, streamed to its own subscriber.
	path, want := testData(t, 4<<20, true)
	oid := create(t, s.c, &acp.CreateTerminalRequest{SessionID: "t", Command: "cat", Args: []string{path}})
	got, dropped, _ := readAll(t, s.c, other, oid, false)
	if uint64(len(got))+dropped != uint64(len(want)) {
		t.Errorf("the other terminal streamed %d bytes and dropped %d of %d", len(got), dropped, len(want))
	}
	// The held terminals: their output so far, kill, wait, release.
	if out := outputOf(t, s.c, ids[0]); out.Output == "" || out.ExitStatus != nil {
		t.Errorf("output of a held terminal: %d bytes, exit %v", len(out.Output), out.ExitStatus)
	}
	if _, err := s.c.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: ids[0]}); err != nil {
		t.Fatal(err)
	}
	if st := exitOf(t, s.c, ids[0]); st.Signal == nil || *st.Signal != "SIGTERM" {
		t.Errorf("after kill: %v", st)
	}
	for _, id := range ids {
		if _, err := s.c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if held := stalled.(*remote.Subscription).Held(); held > 2*testWindow {
		t.Errorf("the stalled subscriber holds %d bytes, over its window for two terminals", held)
	}
	// The stalled subscriber, read at last, sees both terminals end, the
	// output it had no room for counted as dropped.
	ended := map[acp.TerminalID]bool{}
	var skipped uint64
	for len(ended) < len(ids) {
		ev, err := stalled.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		skipped += ev.Dropped
		if ev.Kind == terminal.EventReleased {
			ended[ev.TerminalID] = true
		}
	}
	if skipped == 0 {
		t.Error("released while stalled, yet nothing was skipped")
	}

	// A held command and a closed connection: everything ends at once.
	held := create(t, s.c, &acp.CreateTerminalRequest{Command: "trap '' TERM; yes"})
	if !stillRunning(t, s.c, "s", held, 100*time.Millisecond) {
		t.Fatal("yes exited")
	}
	start := time.Now()
	_ = s.c.Close()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(remote.ShutdownBound):
		t.Fatalf("Serve did not return within %v of the client's end", remote.ShutdownBound)
	}
	t.Logf("Serve returned %v after the client closed", time.Since(start).Round(time.Millisecond))
}

// A subscriber that attaches late asks for the retained output again
// (Resume), and being lossless gets all of it through the window, in
// order, where the first stream had to drop.
func TestResumeLossless(t *testing.T) {
	t.Parallel()
	s := losslessServe(t)
	early, err := s.c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	path, want := testData(t, 4<<20, true)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "cat", Args: []string{path}})
	exitOf(t, s.c, id)
	if _, dropped, _ := readAll(t, s.c, early, id, false); dropped == 0 {
		t.Error("the first stream dropped nothing: this test shows nothing")
	}
	sub, err := s.c.SubscribeHeld("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.c.Resume(testCtx(t), "s", id, 0); err != nil {
		t.Fatal(err)
	}
	got, dropped, maxHeld := readAll(t, s.c, sub, id, true)
	if dropped != 0 || !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, dropped %d, want %d", len(got), dropped, len(want))
	}
	if maxHeld > testWindow {
		t.Errorf("the subscriber held %d bytes, over the window of %d", maxHeld, testWindow)
	}
}

// roundTrip makes one request of the server that moves no output.
func roundTrip(t *testing.T, c *remote.Client) {
	t.Helper()
	_, err := c.TerminalOutput(testCtx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: "no-such-terminal"})
	if acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Fatalf("output of an unknown terminal: %v", err)
	}
}

func outputOf(t *testing.T, c *remote.Client, id acp.TerminalID) *acp.TerminalOutputResponse {
	t.Helper()
	out, err := c.TerminalOutput(testCtx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	return out
}

func exitOf(t *testing.T, c *remote.Client, id acp.TerminalID) acp.TerminalExitStatus {
	t.Helper()
	w, err := c.WaitForTerminalExit(testCtx(t), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal}
}
