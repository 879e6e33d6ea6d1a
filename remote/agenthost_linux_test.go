package remote_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
)

// TestHostAgent: the hosted agent reads what the host reads and writes
// its own stdout, and its exit code is the host's answer; when stdin
// ends, an agent that ignores it and SIGTERM is killed after the grace,
// with its setsid descendants; an agent that exits has what it left
// behind killed.
func TestHostAgent(t *testing.T) {
	t.Setenv(remotetest.MarkerVar, "") // set per case below
	opts := &remote.AgentHostOptions{Grace: 100 * time.Millisecond}
	t.Run("passes stdio and the exit code", func(t *testing.T) {
		var out bytes.Buffer
		code, err := remote.HostAgent(remotetest.Ctx(t), []string{"sh", "-c", "cat; exit 3"}, strings.NewReader("hi\n"), &out, io.Discard, opts)
		if err != nil || code != 3 || out.String() != "hi\n" {
			t.Errorf("HostAgent = %d, %v; output %q; want 3 and %q", code, err, out.String(), "hi\n")
		}
	})
	t.Run("stdin ends: the agent and its tree are killed", func(t *testing.T) {
		marker := remotetest.NewMarker()
		t.Setenv(remotetest.MarkerVar, marker)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() {
			code, _ := remote.HostAgent(remotetest.Ctx(t), []string{"sh", "-c", "trap '' TERM; setsid sleep 1051 & while :; do sleep 1; done"}, r, io.Discard, io.Discard, opts)
			done <- code
		}()
		remotetest.WaitMarked(t, remotetest.SameMachine{}, marker, 3)
		w.Close() // the connection drops
		awaitHosted(t, done, 128+9, marker, "the end of its stdin")
	})
	t.Run("the host is told to stop: the agent and its tree are killed", func(t *testing.T) {
		marker := remotetest.NewMarker()
		t.Setenv(remotetest.MarkerVar, marker)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close() // stdin never ends: ctx does
		ctx, cancel := context.WithCancel(remotetest.Ctx(t))
		done := make(chan int, 1)
		go func() {
			code, _ := remote.HostAgent(ctx, []string{"sh", "-c", "setsid sleep 1054 & sleep 1055"}, r, io.Discard, io.Discard, opts)
			done <- code
		}()
		remotetest.WaitMarked(t, remotetest.SameMachine{}, marker, 3)
		cancel()
		awaitHosted(t, done, 128+15, marker, "its context ended")
	})
	t.Run("the agent exits: what it left is killed", func(t *testing.T) {
		marker := remotetest.NewMarker()
		t.Setenv(remotetest.MarkerVar, marker)
		code, err := remote.HostAgent(remotetest.Ctx(t), []string{"sh", "-c", "setsid sleep 1052 & sleep 1053 & exit 0"}, strings.NewReader(""), io.Discard, io.Discard, opts)
		if err != nil || code != 0 {
			t.Errorf("HostAgent = %d, %v", code, err)
		}
		if left := sshtest.WaitNoneRunning(remotetest.MarkerVar, marker, 2*time.Second); len(left) > 0 {
			t.Errorf("still running after HostAgent returned: %v", left)
		}
	})
}

// awaitHosted waits for HostAgent's exit code on done after what happened
// (after), checks it is want, and that nothing holding marker is left.
func awaitHosted(t *testing.T, done <-chan int, want int, marker, after string) {
	t.Helper()
	start := time.Now()
	select {
	case code := <-done:
		if code != want {
			t.Errorf("exit code %d, want %d", code, want)
		}
		t.Logf("returned %v after %s", time.Since(start).Round(time.Millisecond), after)
	case <-time.After(10 * time.Second):
		t.Fatalf("HostAgent still runs 10 s after %s", after)
	}
	if left := sshtest.WaitNoneRunning(remotetest.MarkerVar, marker, 2*time.Second); len(left) > 0 {
		t.Errorf("still running after HostAgent returned: %v", left)
	}
}
