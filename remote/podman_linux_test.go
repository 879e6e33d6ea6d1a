package remote_test

import (
	"bufio"
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
	"github.com/acpterm/acpterm/remote/remotetest"
)

// containerWS is the workspace directory of the test image.
const containerWS = "/ws"

// dialContainer copies acpterm into the container with Install (the
// static build: the image has no libc) and starts the exec server there
// through the engine's exec -i, in /ws (remotetest.Dial). copts names
// the tool and its options.
func dialContainer(t testing.TB, target string, copts remote.CommandOptions) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	tg, err := remote.ParseTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	return remotetest.Dial(t, tg, &copts, acptermBuild(t, "static"))
}

// TestPodmanContract runs the terminal contract in a real podman
// container of busybox-static, with acpterm copied in by Install: once
// where the exec server falls back to the /proc scan, once with the
// host's cgroup2 hierarchy mounted so that it gives each terminal a
// cgroup.
func TestPodmanContract(t *testing.T) {
	t.Parallel()
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
			remotetest.Contract(t, c, containerWS, inContainer{name: name}, nil)
		})
	}
}

// TestPodmanDisconnectKillsEverything: kill -9 of the local podman exec
// client, mid-command: in the container nothing of the command is left
// within 2 s (the engine closes the server's stdin, and the dead-man
// rule does the rest), and the client's calls fail instead of hanging.
func TestPodmanDisconnectKillsEverything(t *testing.T) {
	t.Parallel()
	needPodman(t)
	name := startContainer(t, containerOptions{})
	c, conn, _ := dialContainer(t, "podman://"+name+containerWS, remote.CommandOptions{})
	remotetest.Disconnect(t, c, conn, inContainer{name: name})
}

// TestPodmanLocalSideKilled: kill -9 of the process on the local side
// (acpterm, here a stand-in that wrote the requests and holds podman
// exec's stdin): podman exec, left running, sees the end of its input,
// and in the container nothing of the command is left within 2 s.
func TestPodmanLocalSideKilled(t *testing.T) {
	t.Parallel()
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
	if left := remotetest.WaitPSGone(t, inContainer{name: name}, 2*time.Second, "sleep 1042", "exec-server"); len(left) > 0 {
		t.Errorf("ps in the container shows %q", left)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("podman exec still runs 5 s after its input ended")
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
	t.Parallel()
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
	t.Parallel()
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
	remotetest.Contract(t, c, containerWS, inContainer{name: name}, nil)
	t.Run("disconnect", func(t *testing.T) { remotetest.Disconnect(t, c, conn, inContainer{name: name}) })
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
