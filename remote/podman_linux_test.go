package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// containerWS is the workspace directory of the test image.
const containerWS = "/ws"

// dialContainer copies acpterm into the container with Install (the
// static build: the image has no libc) and starts the exec server there
// through the engine's exec -i, in /ws. copts names the tool and its
// options.
func dialContainer(t testing.TB, target string, copts remote.CommandOptions) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	tg, err := remote.ParseTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	in, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: acptermBuild(t, "static")})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(in)
	copts.Binary = in.Path
	cmd, err := remote.Command(tg, &copts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.NewClient(testCtx(t), conn, nil)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("NewClient through %s: %v; it said: %s", cmd.Args[0], err, conn.Stderr())
	}
	t.Logf("exec server answered its hello %v after %s exec started", time.Since(start).Round(time.Millisecond), cmd.Args[0])
	t.Cleanup(func() { _ = c.Close() })
	return c, conn, in
}

// TestPodmanContract runs the terminal contract in a real podman
// container of busybox-static, with acpterm copied in by Install: once
// where the exec server falls back to the /proc scan, once with the
// host's cgroup2 hierarchy mounted so that it gives each terminal a
// cgroup.
func TestPodmanContract(t *testing.T) {
	needPodman(t)
	for _, tc := range []struct {
		name      string
		opts      containerOptions
		isolation string
	}{
		{"procscan", containerOptions{}, "procscan"},
		{"cgroup", containerOptions{cgroup: true}, "cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := startContainer(t, tc.opts)
			c, _, in := dialContainer(t, "podman://"+name+containerWS, remote.CommandOptions{})
			if !in.Copied || !strings.HasPrefix(in.Path, "/tmp/acpterm-0/") {
				t.Errorf("install: %+v, want a copy in /tmp/acpterm-0 (the container's root has HOME=/)", in)
			}
			h := c.Hello()
			if h.OS != "linux" || h.DefaultCwd != containerWS || h.Isolation != tc.isolation {
				t.Errorf("hello: os %s, cwd %s, isolation %s; want linux, %s, %s", h.OS, h.DefaultCwd, h.Isolation, containerWS, tc.isolation)
			}
			// A second install finds the copy.
			again, err := remote.Install(testCtx(t), remote.Target{Kind: remote.Podman, Container: name}, nil, &remote.InstallOptions{Local: acptermBuild(t, "static")})
			if err != nil || again.Copied || again.Path != in.Path {
				t.Errorf("second install: %+v, %v", again, err)
			} else {
				t.Logf("second install: %v", again.Took.Round(time.Millisecond))
			}
			contract(t, c, containerWS, func(words ...string) []string { return containerPS(t, name, words...) })
		})
	}
}

// contract is the terminal contract as TestSSHContract has it, against
// a client whose server runs in ws. ps lists the target's processes
// whose command line holds one of words, as the target itself sees them.
func contract(t *testing.T, c *remote.Client, ws string, ps func(words ...string) []string) {
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
		if out := output(t, c, id); out.ExitStatus == nil {
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
		id := create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "sleep 1031 & echo started"}, marker))
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
		if left := ps("sleep 1031"); len(left) > 0 {
			t.Errorf("after release, ps in the target shows %q", left)
		}
	})
	t.Run("tree gone after release, setsid included", func(t *testing.T) {
		marker := newMarker(t)
		id := create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "setsid sleep 1032 & sleep 1033 & echo ok; wait"}, marker))
		waitMarked(t, marker, 3)
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
			t.Errorf("after release, still running: %v", left)
		}
		if left := ps("sleep 1032", "sleep 1033"); len(left) > 0 {
			t.Errorf("after release, ps in the target shows %q", left)
		}
	})
}

// TestPodmanDisconnectKillsEverything: kill -9 of the local podman exec
// client, mid-command: in the container nothing of the command is left
// within 2 s (the engine closes the server's stdin, and the dead-man
// rule does the rest), and the client's calls fail instead of hanging.
func TestPodmanDisconnectKillsEverything(t *testing.T) {
	needPodman(t)
	name := startContainer(t, containerOptions{})
	c, conn, _ := dialContainer(t, "podman://"+name+containerWS, remote.CommandOptions{})
	disconnect(t, c, conn, func(words ...string) []string { return containerPS(t, name, words...) })
}

// disconnect kills the transport's local process under a command that
// ignores SIGTERM and has a setsid descendant, and checks that the
// target is clean within 2 s.
func disconnect(t *testing.T, c *remote.Client, conn *remote.Conn, ps func(words ...string) []string) {
	marker := newMarker(t)
	create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "trap '' TERM; setsid sleep 1041 & while :; do sleep 1; done"}, marker))
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
		t.Logf("everything gone %v after kill -9 of the local exec client", time.Since(start).Round(time.Millisecond))
	}
	if left := waitPSGone(ps, 2*time.Second, "sleep 1041", "exec-server"); len(left) > 0 {
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
}

// TestPodmanLocalSideKilled: kill -9 of the process on the local side
// (acpterm, here a stand-in that wrote the requests and holds podman
// exec's stdin): podman exec, left running, sees the end of its input,
// and in the container nothing of the command is left within 2 s.
func TestPodmanLocalSideKilled(t *testing.T) {
	needPodman(t)
	name := startContainer(t, containerOptions{})
	tg := remote.Target{Kind: remote.Podman, Container: name}
	in, err := remote.Install(testCtx(t), tg, nil, &remote.InstallOptions{Local: acptermBuild(t, "static")})
	if err != nil {
		t.Fatal(err)
	}
	marker := newMarker(t)
	lines := jsonLines(t,
		map[string]any{"jsonrpc": "2.0", "id": 1, "method": remote.MethodHello, "params": remote.HelloRequest{ProtocolVersion: remote.ProtocolVersion}},
		map[string]any{"jsonrpc": "2.0", "id": 2, "method": "terminal/create", "params": withMarker(&acp.CreateTerminalRequest{
			SessionID: "s", Command: "trap '' TERM; setsid sleep 1042 & while :; do sleep 1; done"}, marker)},
	)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// The local side: writes the requests, then holds the pipe open.
	local := exec.Command("sh", "-c", `printf '%s' "$REQUESTS"; exec sleep 1000`)
	local.Env = append(os.Environ(), "REQUESTS="+lines)
	local.Stdout = pw
	cmd, err := remote.Command(tg, &remote.CommandOptions{Binary: in.Path, ServerArgs: []string{"--cwd", containerWS}})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.Process.Kill(); _ = local.Wait() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	pr.Close()
	pw.Close()
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), remote.NotifyStarted) {
				ok = true
				started <- true
			}
		}
		if !ok {
			started <- false
		}
	}()
	if !<-started {
		t.Fatal("the exec server did not start the command")
	}
	waitMarked(t, marker, 3)
	if err := local.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if left := waitNoneMarked(marker, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after kill -9 of the local side, still running in the container: %v", left)
	} else {
		t.Logf("everything gone %v after kill -9 of the local side", time.Since(start).Round(time.Millisecond))
	}
	ps := func(words ...string) []string { return containerPS(t, name, words...) }
	if left := waitPSGone(ps, 2*time.Second, "sleep 1042", "exec-server"); len(left) > 0 {
		t.Errorf("ps in the container shows %q", left)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("podman exec still runs 5 s after its input ended")
	}
}

// waitPSGone asks the target's ps until none of words shows or within
// ends (each ask is a podman exec, a few hundred ms).
func waitPSGone(ps func(words ...string) []string, within time.Duration, words ...string) []string {
	deadline := time.Now().Add(within)
	for {
		left := ps(words...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

func jsonLines(t testing.TB, msgs ...any) string {
	t.Helper()
	var b strings.Builder
	for _, m := range msgs {
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPodmanDynamicBuildRefused: the default build, linked against libc,
// is not copied into a container that has no dynamic loader; the error
// says why and what to build instead, and nothing is left there.
func TestPodmanDynamicBuildRefused(t *testing.T) {
	needPodman(t)
	dyn := acptermBuild(t, "default")
	info, err := exec.Command("file", "-L", dyn).Output()
	if err == nil && !strings.Contains(string(info), "dynamically linked") {
		t.Skipf("go build makes a static binary here: %s", info)
	}
	name := startContainer(t, containerOptions{})
	_, err = remote.Install(testCtx(t), remote.Target{Kind: remote.Podman, Container: name}, nil, &remote.InstallOptions{Local: dyn})
	if !errors.Is(err, remote.ErrPlatform) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("Install of a dynamic build: %v", err)
	}
	if left := containerExec(t, name, "find", "/tmp", "-name", "acpterm*", "-type", "f"); left != "" {
		t.Errorf("left in the container: %s", left)
	}
}

// TestDockerCommand: docker:// targets take the podman path with the
// docker CLI: the same argv, the tool's options before "exec".
func TestDockerCommand(t *testing.T) {
	tg, err := remote.ParseTarget("docker://web/srv/app")
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := remote.Command(tg, &remote.CommandOptions{Binary: "/tmp/acpterm-0/x/acpterm", ToolArgs: []string{"-H", "unix:///run/d.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docker", "-H", "unix:///run/d.sock", "exec", "-i", "web", "/tmp/acpterm-0/x/acpterm", "exec-server", "--cwd", "/srv/app"}
	if !slicesEqual(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
}

// TestDockerContract runs the contract through the docker CLI, against
// the Docker API that podman serves (podman system service on a socket
// of the test's own, handed over by socket activation, so it is ready
// before podman even starts): the same Install and exec server as for
// podman, a different client of a different API.
func TestDockerContract(t *testing.T) {
	needPodman(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI: TestDockerCommand checks the docker argv only")
	}
	sock := dockerAPI(t)
	name := startContainer(t, containerOptions{})
	copts := remote.CommandOptions{ToolArgs: []string{"-H", "unix://" + sock}}
	c, conn, in := dialContainer(t, "docker://"+name+containerWS, copts)
	if !in.Copied {
		t.Errorf("install: %+v", in)
	}
	ps := func(words ...string) []string { return containerPS(t, name, words...) }
	contract(t, c, containerWS, ps)
	t.Run("disconnect", func(t *testing.T) { disconnect(t, c, conn, ps) })
}

// dockerAPI serves podman's Docker-compatible API on a new unix socket
// until the test ends, and returns the socket's path.
func dockerAPI(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	f, err := ul.File()
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// LISTEN_PID must be podman's own PID: $$ is, once sh execs it.
	svc := exec.Command("sh", "-c", "LISTEN_FDS=1 LISTEN_PID=$$ exec podman system service --time=0")
	svc.ExtraFiles = []*os.File{f} // fd 3
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = svc.Process.Kill()
		_ = svc.Wait()
	})
	return sock
}
