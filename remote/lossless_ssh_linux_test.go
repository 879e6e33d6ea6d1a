package remote_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// dialWith is sshEnv.dial with client options and ssh's own (nil: the
// config).
func (e *sshEnv) dialWith(t testing.TB, dir string, copts *remote.ClientOptions, sshArgs []string, serverArgs ...string) (*remote.Client, *remote.Conn) {
	t.Helper()
	target, err := remote.ParseTarget("ssh://target" + dir)
	if err != nil {
		t.Fatal(err)
	}
	if sshArgs == nil {
		sshArgs = []string{"-F", e.config}
	}
	cmd, err := remote.Command(target, &remote.CommandOptions{Binary: e.bin, ToolArgs: sshArgs, ServerArgs: serverArgs})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.NewClient(testCtx(t), conn, copts)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("NewClient over ssh: %v; ssh said: %s", err, conn.Stderr())
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, conn
}

// TestSSHLossless: through a real sshd, a lossless stream delivers every
// byte of an output far larger than the window, in order, to a slow
// subscriber, as attachments and as JSON alike; a stalled subscriber
// holds its command, which kill and release still end; and a dropped
// connection leaves nothing of a held command running on the target.
func TestSSHLossless(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	ws := t.TempDir()
	for _, json := range []bool{false, true} {
		name := map[bool]string{false: "attachments", true: "json"}[json]
		t.Run(name, func(t *testing.T) {
			c, _ := e.dialWith(t, ws, &remote.ClientOptions{Window: testWindow, JSONOutput: json}, nil)
			sub, err := c.SubscribeHeld("", "")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			for _, text := range []bool{true, false} {
				// Sixteen windows: every one of them waits on the reader.
				path, want := testData(t, 4<<20, text)
				limit := uint64(1000)
				id := create(t, c, &acp.CreateTerminalRequest{Command: "cat", Args: []string{path}, OutputByteLimit: &limit})
				got, dropped, maxHeld := readAll(t, c, sub, id, true)
				if dropped != 0 || !bytes.Equal(got, want) {
					t.Fatalf("text %v: got %d bytes (%d dropped), want %d", text, len(got), dropped, len(want))
				}
				if maxHeld > testWindow {
					t.Errorf("the subscriber held %d bytes, over the window of %d", maxHeld, testWindow)
				}
			}
		})
	}

	t.Run("stalled", func(t *testing.T) {
		c, conn := e.dialWith(t, ws, &remote.ClientOptions{Window: testWindow}, nil)
		sub, err := c.SubscribeHeld("", "")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		ctx := testCtx(t)
		id := create(t, c, &acp.CreateTerminalRequest{Command: "yes"})
		if !stillRunning(t, c, "s", id, 200*time.Millisecond) {
			t.Fatal("yes exited")
		}
		if _, err := c.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if st := waitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGTERM" {
			t.Errorf("after kill: %v", st)
		}
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		marker := newMarker(t)
		create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "trap '' TERM; yes"}, marker))
		waitMarked(t, marker, 1)
		if err := conn.Process().Kill(); err != nil {
			t.Fatal(err)
		}
		if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
			t.Errorf("2 s after the disconnect, a held command still runs on the target: %v", left)
		}
	})
}
