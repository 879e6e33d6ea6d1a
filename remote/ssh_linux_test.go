package remote_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/internal/sshtest"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
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
	// Shared with the other packages' plain builds (proctest.GoBuild).
	if e.bin, err = proctest.GoBuild(dir, "acpterm", "build", acptermPkg); err != nil {
		return fail("building acpterm: %v", err)
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

// The marker helpers of the remote package's tests, on this machine's
// /proc (remotetest.SameMachine): sshd and the test containers run
// their processes here.

func newMarker(testing.TB) string { return remotetest.NewMarker() }

func withMarker(req *acp.CreateTerminalRequest, marker string) *acp.CreateTerminalRequest {
	return remotetest.WithMarker(req, marker)
}

// waitNoneMarked waits until no process holds the marker or within ends.
func waitNoneMarked(marker string, within time.Duration) []int {
	return sshtest.WaitNoneRunning(remotetest.MarkerVar, marker, within)
}

// waitMarked waits until n processes hold the marker.
func waitMarked(t testing.TB, marker string, n int) {
	t.Helper()
	remotetest.WaitMarked(t, remotetest.SameMachine{}, marker, n)
}

func waitExit(t testing.TB, c *remote.Client, id acp.TerminalID) acp.TerminalExitStatus {
	t.Helper()
	return remotetest.WaitExit(t, c, id)
}

func output(t testing.TB, c *remote.Client, id acp.TerminalID) *acp.TerminalOutputResponse {
	t.Helper()
	return remotetest.Output(t, c, id)
}

// TestSSHContract runs the terminal contract (remotetest.Contract) on the
// other side of a real sshd, sandboxed there as acpterm run would sandbox
// it.
func TestSSHContract(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	ws := t.TempDir()
	c, _ := e.dial(t, ws)
	h := c.Hello()
	if h.DefaultCwd != ws || h.Sandbox.Mode != "workspace-write" {
		t.Errorf("hello: cwd %q (want %q), sandbox %q", h.DefaultCwd, ws, h.Sandbox.Mode)
	}
	remotetest.Contract(t, c, ws, remotetest.SameMachine{}, &remotetest.Options{SetsidNeedsCgroup: true})
}

// TestSSHDisconnectKillsEverything: kill -9 of the local ssh process,
// mid-command; on the target nothing of the command is left within 2 s,
// and the client's wait fails with ErrDisconnected instead of hanging
// (remotetest.Disconnect).
func TestSSHDisconnectKillsEverything(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	ws := t.TempDir()
	c, conn := e.dial(t, ws)
	remotetest.Disconnect(t, c, conn, remotetest.SameMachine{})
}
