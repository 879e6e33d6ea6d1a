//go:build linux

package terminal

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// heldLimit is the subscriber buffer of the hold tests: small against
// the output, so that a subscription that drops would drop most of it.
const heldLimit = 64 << 10

// randomFile writes n random bytes to a file and returns its path and
// contents.
func randomFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// notWithin reports whether the command is still running after d: the
// only way to see that something blocks is to give it time not to.
func notWithin(t *testing.T, m *Manager, info Info, d time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := m.Wait(ctx, info.SessionID, info.TerminalID)
	return errors.Is(err, context.DeadlineExceeded)
}

// A held subscription gets every byte, in order, from a command that
// writes far more than the subscriber's buffer and the terminal's
// outputByteLimit, while the subscriber lags: the command waits for it.
func TestHeldSubscriptionLosesNothing(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: heldLimit})
	path, want := randomFile(t, 8<<20)
	limit := uint64(1024)
	info, sub, err := m.CreateHeld(testCtx(t), Request{SessionID: "s", Command: "cat", Args: []string{path}, OutputByteLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ev, err := sub.Next(testCtx(t))
	if err != nil || ev.Kind != EventCreated {
		t.Fatalf("first event %v, %v", ev.Kind, err)
	}
	// Nobody reads: the command cannot get far.
	if !notWithin(t, m, info, 300*time.Millisecond) {
		t.Fatal("the command ran to its end while its held subscriber read nothing")
	}
	var got []byte
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatalf("Next: %v after %d bytes", err, len(got))
		}
		if ev.Dropped != 0 {
			t.Fatalf("%d bytes dropped after %d", ev.Dropped, len(got))
		}
		// Once the process has exited, the drain may queue the pipe's
		// contents beyond the buffer.
		if len(ev.Data) > heldLimit+heldDrain {
			t.Fatalf("an event of %d bytes, over the buffer of %d and the drain", len(ev.Data), heldLimit)
		}
		got = append(got, ev.Data...)
		if ev.Kind == EventExited {
			break
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d (equal prefix: %v)", len(got), len(want), bytes.HasPrefix(want, got))
	}
	if out := mustOutput(t, m, info); len(out.Text) > int(limit) || !out.Truncated {
		t.Errorf("tail of %d bytes, truncated %v: the outputByteLimit still bounds it", len(out.Text), out.Truncated)
	}
	mustRelease(t, m, info)
}

// The same command with an ordinary subscription that reads nothing
// runs to its end and loses output: the default never holds a command.
func TestUnheldSubscriptionDrops(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: heldLimit})
	path, want := randomFile(t, 8<<20)
	info := mustCreate(t, m, Request{SessionID: "s", Command: "cat", Args: []string{path}})
	sub, err := m.Subscribe("s", info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mustWait(t, m, info)
	var got, dropped uint64
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		got, dropped = got+uint64(len(ev.Data)), dropped+ev.Dropped
		if ev.Kind == EventExited {
			break
		}
	}
	if dropped == 0 || got+dropped != uint64(len(want)) {
		t.Errorf("got %d, dropped %d of %d", got, dropped, len(want))
	}
	mustRelease(t, m, info)
}

// A held subscriber that stops reading stalls its own command only: the
// terminal answers Output, Kill, Wait and Release, and another terminal
// runs to its end meanwhile.
func TestHeldSubscriberStalledKillRelease(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: heldLimit, KillGrace: time.Minute})
	for _, end := range []string{"kill", "release"} {
		t.Run(end, func(t *testing.T) {
			info, sub, err := m.CreateHeld(testCtx(t), Request{SessionID: "s", Command: "yes"})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if !notWithin(t, m, info, 100*time.Millisecond) {
				t.Fatal("yes exited")
			}
			other := mustCreate(t, m, Request{SessionID: "s", Command: "head", Args: []string{"-c", "1000000", "/dev/zero"}})
			mustWait(t, m, other)
			if n := len(mustOutput(t, m, other).Text); n != 1000000 {
				t.Errorf("the other terminal has %d bytes", n)
			}
			mustRelease(t, m, other)
			if out := mustOutput(t, m, info); len(out.Text) == 0 || out.ExitStatus != nil {
				t.Errorf("output of the held terminal: %d bytes, exit %v", len(out.Text), out.ExitStatus)
			}
			start := time.Now()
			switch end {
			case "kill":
				if err := m.Kill(testCtx(t), "s", info.TerminalID); err != nil {
					t.Fatal(err)
				}
				mustWait(t, m, info)
				mustRelease(t, m, info)
			case "release":
				mustRelease(t, m, info)
			}
			// yes dies of SIGTERM in write(2): no grace period is waited.
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("%s took %v", end, el)
			}
			// The subscription ends with the terminal, after what it queued.
			for {
				ev, err := sub.Next(testCtx(t))
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if ev.Kind == EventReleased {
					break
				}
			}
		})
	}
}

// Closing a held subscription lets its command run on.
func TestHeldSubscriptionCloseReleasesTheCommand(t *testing.T) {
	m := newTestManager(t, &Options{SubscriberBuffer: heldLimit})
	info, sub, err := m.CreateHeld(testCtx(t), Request{SessionID: "s", Command: "head", Args: []string{"-c", "4000000", "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	if !notWithin(t, m, info, 100*time.Millisecond) {
		t.Fatal("the command ran to its end while its held subscriber read nothing")
	}
	sub.Close()
	mustWait(t, m, info)
	mustRelease(t, m, info)
}
