package remotetest

import (
	"errors"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// Options adapt Contract to a target.
type Options struct {
	// SetsidNeedsCgroup skips the setsid subtest unless the exec server
	// says its isolation is "cgroup": without a cgroup, a setsid
	// descendant is found by the server's /proc scan for its own marker
	// ("procscan") or not at all ("group"), and a target whose isolation
	// the test does not choose (sshd on this machine) is not held to
	// that. The container tests choose theirs, and run it either way.
	SetsidNeedsCgroup bool
}

// Contract runs the terminal contract, one subtest per rule, on c, whose
// exec server runs in ws; pl sees the target's processes. opts may be
// nil.
func Contract(t *testing.T, c *remote.Client, ws string, pl Place, opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	ctx := Ctx(t)
	t.Run("output and exit code", func(t *testing.T) {
		id := Create(t, c, &acp.CreateTerminalRequest{Command: "/bin/sh", Args: []string{"-c", "pwd; echo err >&2; exit 7"}})
		if st := WaitExit(t, c, id); st.String() != "exit 7" {
			t.Errorf("status %v", st)
		}
		if out := Output(t, c, id); out.Output != ws+"\nerr\n" || out.Truncated {
			t.Errorf("output %q", out.Output)
		}
	})
	t.Run("truncation", func(t *testing.T) {
		limit := uint64(5)
		id := Create(t, c, &acp.CreateTerminalRequest{Command: "printf", Args: []string{"héllo wörld"}, OutputByteLimit: &limit})
		WaitExit(t, c, id)
		if out := Output(t, c, id); out.Output != "örld" || !out.Truncated {
			t.Errorf("output %q truncated %v", out.Output, out.Truncated)
		}
	})
	t.Run("signal by name", func(t *testing.T) {
		// A transport alone (kubectl exec, podman exec) would say exit
		// 137 here; the exec server says what happened.
		id := Create(t, c, &acp.CreateTerminalRequest{Command: "kill -KILL $$"})
		if st := WaitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGKILL" || st.ExitCode != nil {
			t.Errorf("status %v, want SIGKILL and no exit code", st)
		}
	})
	t.Run("kill keeps the terminal", func(t *testing.T) {
		id := Create(t, c, &acp.CreateTerminalRequest{Command: "echo up; sleep 100"})
		if _, err := c.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if st := WaitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGTERM" {
			t.Errorf("status %v", st)
		}
		if out := Output(t, c, id); out.ExitStatus == nil {
			t.Errorf("output after kill has no exit status")
		}
	})
	t.Run("release invalidates", func(t *testing.T) {
		id := Create(t, c, &acp.CreateTerminalRequest{Command: "true"})
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		_, err := c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
		if acp.ErrorCode(err) != acp.CodeInvalidParams {
			t.Errorf("output after release: %v", err)
		}
	})
	t.Run("grandchild holding the pipe", func(t *testing.T) { grandchildHoldingPipe(t, c, pl) })
	t.Run("tree gone after release, setsid included", func(t *testing.T) { treeGoneAfterRelease(t, c, pl, opts) })
}

// grandchildHoldingPipe: a command whose grandchild keeps its output
// pipe open still ends when it exits, and the release ends the
// grandchild.
func grandchildHoldingPipe(t *testing.T, c *remote.Client, pl Place) {
	ctx := Ctx(t)
	marker := NewMarker()
	id := Create(t, c, WithMarker(&acp.CreateTerminalRequest{Command: "sleep 1031 & echo started"}, marker))
	start := time.Now()
	if st := WaitExit(t, c, id); st.String() != "exit 0" {
		t.Errorf("status %v", st)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("wait took %v", el)
	}
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	if left := WaitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
		t.Errorf("after release, still running: %v", left)
	}
	if left := pl.PS(t, "sleep 1031"); len(left) > 0 {
		t.Errorf("after release, ps in the target shows %q", left)
	}
}

// treeGoneAfterRelease: the release ends the command's whole tree, a
// setsid descendant included.
func treeGoneAfterRelease(t *testing.T, c *remote.Client, pl Place, opts *Options) {
	if h := c.Hello(); opts.SetsidNeedsCgroup && h.Isolation != "cgroup" {
		t.Skipf("isolation %s on the target: setsid descendants are found by the marker scan only", h.Isolation)
	}
	ctx := Ctx(t)
	marker := NewMarker()
	id := Create(t, c, WithMarker(&acp.CreateTerminalRequest{Command: "setsid sleep 1032 & sleep 1033 & echo ok; wait"}, marker))
	WaitMarked(t, pl, marker, 3)
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	if left := WaitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
		t.Errorf("after release, still running: %v", left)
	}
	if left := pl.PS(t, "sleep 1032", "sleep 1033"); len(left) > 0 {
		t.Errorf("after release, ps in the target shows %q", left)
	}
}

// Disconnect kills the transport's local process (kill -9 of ssh,
// podman exec, kubectl) under a command that ignores SIGTERM and has a
// setsid descendant: within 2 s nothing of the command is left on the
// target, nor of the exec server where pl's PS can tell (the dead-man
// rule: the server sees its input end), a wait in flight fails with
// remote.ErrDisconnected instead of hanging, and so does a call after.
func Disconnect(t *testing.T, c *remote.Client, conn *remote.Conn, pl Place) {
	marker := NewMarker()
	id := Create(t, c, WithMarker(&acp.CreateTerminalRequest{Command: "trap '' TERM; setsid sleep 1041 & while :; do sleep 1; done"}, marker))
	WaitMarked(t, pl, marker, 3)
	waitErr := make(chan error, 1)
	go func() {
		// The command never exits: only the disconnect ends this wait.
		_, err := c.WaitForTerminalExit(Ctx(t), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
		waitErr <- err
	}()
	if err := conn.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if left := WaitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after the disconnect, still running on the target: %v", left)
	} else {
		t.Logf("the command's processes gone %v after kill -9 of the transport", time.Since(start).Round(time.Millisecond))
	}
	if left := WaitPSGone(t, pl, 2*time.Second, "sleep 1041", "exec-server"); len(left) > 0 {
		t.Errorf("after the disconnect, ps in the target shows %q", left)
	}
	select {
	case err := <-waitErr:
		if !errors.Is(err, remote.ErrDisconnected) {
			t.Errorf("a wait after the disconnect: %v, want ErrDisconnected", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a wait hangs after the disconnect")
	}
	if _, err := c.TerminalOutput(Ctx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id}); !errors.Is(err, remote.ErrDisconnected) {
		t.Errorf("a call after the disconnect: %v, want ErrDisconnected", err)
	}
}
