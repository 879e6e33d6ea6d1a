package remote_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/sshtest"
	"github.com/acpterm/acpterm/remote"
)

// sshEnv is a real OpenSSH sshd on 127.0.0.1 (sshtest), started once for
// the package, and the acpterm binary it runs as the exec server.
type sshEnv struct {
	dir    string // temp dir with keys, configs, the binary
	config string // ssh client config: Host "target"
	bin    string
	sshd   *sshtest.Server
	err    error
}

var (
	sshOnce sync.Once
	sshEnvP *sshEnv
)

// needSSH returns the package's sshd, starting it (and building
// acpterm) the first time; it skips the test when sshd is missing.
func needSSH(t testing.TB) *sshEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no sshd")
	}
	if why := sshtest.Missing(); why != "" {
		t.Skip(why)
	}
	sshOnce.Do(func() { sshEnvP = startSSHD() })
	if sshEnvP.err != nil {
		t.Fatal(sshEnvP.err)
	}
	return sshEnvP
}

func stopSSHD() {
	e := sshEnvP
	if e == nil {
		return
	}
	if e.sshd != nil {
		e.sshd.Close()
	}
	_ = os.RemoveAll(e.dir)
}

func startSSHD() *sshEnv {
	e := &sshEnv{}
	fail := func(format string, args ...any) *sshEnv {
		e.err = fmt.Errorf(format, args...)
		return e
	}
	dir, err := os.MkdirTemp("", "remote-sshd-")
	if err != nil {
		return fail("%v", err)
	}
	e.dir = dir
	e.bin = filepath.Join(dir, "acpterm")
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/acpterm")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return fail("building acpterm: %v\n%s", err, out)
	}
	if e.sshd, err = sshtest.Start(dir); err != nil {
		return fail("%v", err)
	}
	e.config = e.sshd.Config
	return e
}

// dial starts the exec server on the target through ssh and returns its
// client and the ssh process's connection.
func (e *sshEnv) dial(t testing.TB, dir string, serverArgs ...string) (*remote.Client, *remote.Conn) {
	t.Helper()
	target, err := remote.ParseTarget("ssh://target" + dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := remote.Command(target, &remote.CommandOptions{Binary: e.bin, ToolArgs: []string{"-F", e.config}, ServerArgs: serverArgs})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.NewClient(testCtx(t), conn, nil)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("NewClient over ssh: %v; ssh said: %s", err, conn.Stderr())
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, conn
}

// newMarker is a value for markerVar unique to one test.
func newMarker(t testing.TB) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const markerVar = "REMOTE_TEST_MARKER"

// marked lists the live processes whose environment holds the marker.
func marked(marker string) []int { return sshtest.Running(markerVar, marker) }

// waitNoneMarked waits until no process holds the marker or within ends.
func waitNoneMarked(marker string, within time.Duration) []int {
	return sshtest.WaitNoneRunning(markerVar, marker, within)
}

// waitMarked polls /proc until n processes hold the marker.
func waitMarked(t testing.TB, marker string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(marker)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes with the marker, want %d", len(marked(marker)), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func withMarker(req *acp.CreateTerminalRequest, marker string) *acp.CreateTerminalRequest {
	req.Env = append(req.Env, acp.EnvVariable{Name: markerVar, Value: marker})
	return req
}

func waitExit(t testing.TB, c *remote.Client, id acp.TerminalID) acp.TerminalExitStatus {
	t.Helper()
	w, err := c.WaitForTerminalExit(testCtx(t), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal}
}

func output(t testing.TB, c *remote.Client, id acp.TerminalID) *acp.TerminalOutputResponse {
	t.Helper()
	out, err := c.TerminalOutput(testCtx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	return out
}

// TestSSHContract runs the terminal contract on the other side of a real
// sshd, sandboxed there as acpterm run would sandbox it.
func TestSSHContract(t *testing.T) {
	e := needSSH(t)
	ws := t.TempDir()
	c, _ := e.dial(t, ws)
	h := c.Hello()
	if h.DefaultCwd != ws || h.Sandbox.Mode != "workspace-write" {
		t.Errorf("hello: cwd %q (want %q), sandbox %q", h.DefaultCwd, ws, h.Sandbox.Mode)
	}
	ctx := testCtx(t)

	t.Run("output and exit code", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "/bin/sh", Args: []string{"-c", "pwd; echo err >&2; exit 7"}})
		if st := waitExit(t, c, id); st.String() != "exit 7" {
			t.Errorf("status %v", st)
		}
		if out := output(t, c, id); out.Output != ws+"\nerr\n" || out.Truncated {
			t.Errorf("output %q", out.Output)
		}
	})
	t.Run("truncation", func(t *testing.T) {
		limit := uint64(5)
		id := create(t, c, &acp.CreateTerminalRequest{Command: "printf", Args: []string{"héllo wörld"}, OutputByteLimit: &limit})
		waitExit(t, c, id)
		if out := output(t, c, id); out.Output != "örld" || !out.Truncated {
			t.Errorf("output %q truncated %v", out.Output, out.Truncated)
		}
	})
	t.Run("signal by name", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "kill -KILL $$"})
		if st := waitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGKILL" {
			t.Errorf("status %v", st)
		}
	})
	t.Run("kill keeps the terminal", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "echo up; sleep 100"})
		if _, err := c.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if st := waitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGTERM" {
			t.Errorf("status %v", st)
		}
		out := output(t, c, id)
		if out.ExitStatus == nil {
			t.Errorf("output after kill has no exit status")
		}
	})
	t.Run("release invalidates", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "true"})
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		_, err := c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
		if acp.ErrorCode(err) != acp.CodeInvalidParams {
			t.Errorf("output after release: %v", err)
		}
	})
	t.Run("grandchild holding the pipe", func(t *testing.T) {
		marker := newMarker(t)
		id := create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "sleep 100 & echo started"}, marker))
		start := time.Now()
		if st := waitExit(t, c, id); st.String() != "exit 0" {
			t.Errorf("status %v", st)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("wait took %v", el)
		}
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
			t.Errorf("after release, still running: %v", left)
		}
	})
	t.Run("tree gone after release, setsid included", func(t *testing.T) {
		if h.Isolation != "cgroup" {
			t.Skipf("isolation %s on the target: setsid descendants are found by the marker scan only", h.Isolation)
		}
		marker := newMarker(t)
		id := create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "setsid sleep 101 & sleep 102 & echo ok; wait"}, marker))
		waitMarked(t, marker, 3)
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
			t.Errorf("after release, still running: %v", left)
		}
	})
}

// TestSSHDisconnectKillsEverything: kill -9 of the local ssh process,
// mid-command; on the target nothing of the command is left within 2 s,
// and the client's wait fails with ErrDisconnected instead of hanging.
func TestSSHDisconnectKillsEverything(t *testing.T) {
	e := needSSH(t)
	ws := t.TempDir()
	c, conn := e.dial(t, ws)
	marker := newMarker(t)
	// A command that ignores SIGTERM, with a setsid descendant.
	create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "trap '' TERM; setsid sleep 103 & while :; do sleep 1; done"}, marker))
	waitMarked(t, marker, 3)
	waitErr := make(chan error, 1)
	go func() {
		_, err := c.WaitForTerminalExit(context.Background(), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: "x"})
		waitErr <- err
	}()
	if err := conn.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after the disconnect, still running on the target: %v", left)
	} else {
		t.Logf("everything gone %v after kill -9 of ssh", time.Since(start).Round(time.Millisecond))
	}
	select {
	case err := <-waitErr:
		if err == nil {
			t.Error("a wait succeeded after the disconnect")
		}
	case <-time.After(5 * time.Second):
		t.Error("a wait hangs after the disconnect")
	}
	_, err := c.TerminalOutput(testCtx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: "x"})
	if err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("a call after the disconnect: %v", err)
	}
}
