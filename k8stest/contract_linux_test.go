//go:build linux

package k8stest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// TestKubernetes runs the remote terminal contract in a pod through
// `kubectl exec -i` and a real kube-apiserver: acpterm copied into the
// pod by remote.Install over the same transport, then the exec server
// there, reached with a k8s://CONTEXT/NAMESPACE/POD/CONTAINER:DIR target
// and the cluster's kubeconfig in ToolArgs.
//
// ACPTERM_K8S=1 go test -timeout 60m -run Kubernetes -v . (in k8stest/)
func TestKubernetes(t *testing.T) {
	optIn(t)
	c := startCluster(t)
	local := acptermBinary(t, t.TempDir())

	t.Run("kubectl exec alone", func(t *testing.T) { transportAlone(t, c) })
	t.Run("contract", func(t *testing.T) {
		p := c.newPod(t, "contract")
		ws := p.workspace(t)
		cl, _, in := dialPod(t, c, p, ws, local)
		if !in.Copied || !strings.HasPrefix(in.Path, filepath.Join(p.ctr.root, "root", ".cache", "acpterm")+"/") {
			t.Errorf("install: %+v, want a copy in the container's ~/.cache/acpterm", in)
		}
		again, err := remote.Install(testCtx(t), p.target(c, ""), c.commandOptions(), &remote.InstallOptions{Local: local})
		if err != nil || again.Copied || again.Path != in.Path {
			t.Errorf("second install: %+v, %v", again, err)
		}
		h := cl.Hello()
		if h.OS != "linux" || h.DefaultCwd != ws {
			t.Errorf("hello: os %s, cwd %s; want linux, %s", h.OS, h.DefaultCwd, ws)
		}
		t.Logf("exec server in the pod: isolation %s, sandbox %s", h.Isolation, h.Sandbox.Mode)
		if got := c.inPod(p).servers(t); len(got) != 1 {
			t.Errorf("exec servers in the pod: %q, want one", got)
		}
		contract(t, cl, ws, sameMachine{p.ctr})
	})
	t.Run("seen from inside the pod", func(t *testing.T) {
		p := c.newPod(t, "inside")
		seenFromInside(t, p.target(c, p.workspace(t)), c.commandOptions, c.inPod(p), local)
	})
	t.Run("disconnect", func(t *testing.T) {
		p := c.newPod(t, "disconnect")
		cl, conn, _ := dialPod(t, c, p, p.workspace(t), local)
		disconnect(t, cl, conn, sameMachine{p.ctr})
		// What the pod itself shows agrees.
		if got := c.inPod(p).servers(t); len(got) > 0 {
			t.Errorf("after the disconnect, exec servers in the pod: %q", got)
		}
	})
}

// transportAlone is what kubectl exec gives without the exec server: exit
// codes as numbers, a signal as 128+N (the streaming server's
// metav1.Status carries a NonZeroExitCode reason and the code, nothing
// else), and a command that goes on running when the connection drops.
func transportAlone(t *testing.T, c *cluster) {
	p := c.newPod(t, "plain")
	exe := func(command string) (string, string, int) {
		return c.kubectl(t, nil, "exec", "-i", "-n", p.Namespace, p.Name, "-c", p.Container, "--", "sh", "-c", command)
	}
	if out, _, code := exe("pwd; echo err >&2; exit 7"); out != p.ctr.root+"\n" || code != 7 {
		t.Errorf("exit 7: stdout %q, exit code %d", out, code)
	}
	_, stderr, code := exe("kill -TERM $$")
	if code != 143 || !strings.Contains(stderr, "exit code 143") {
		t.Errorf("kill -TERM $$: exit code %d, stderr %q; want 143", code, stderr)
	}
	t.Logf("SIGTERM through kubectl exec alone: exit code %d, %q", code, strings.TrimSpace(stderr))

	// kill -9 of kubectl: the node sees the stream end (the command's stdin
	// closes), and the command goes on, as container runtimes have it.
	marker := newMarker(t)
	seen := filepath.Join(p.ctr.root, "stdin-closed")
	cmd := exec.Command("kubectl", "--kubeconfig", c.kubeconfig, "exec", "-i", "-n", p.Namespace, p.Name, "--",
		"env", markerVar+"="+marker, "sh", "-c", "cat >/dev/null; touch "+seen+"; exec sleep 1051")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	waitMarked(t, sameMachine{p.ctr}, marker, 1)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := poll(nil, 5*time.Second, func() error { _, err := os.Stat(seen); return err }); err != nil {
		t.Fatalf("the command's stdin did not close after kill -9 of kubectl: %v", err)
	}
	// Seen from inside the pod too, as a real cluster's pod would show it.
	var left []string
	if err := poll(nil, 5*time.Second, func() error {
		if left = c.inPod(p).marked(t, marker); len(left) != 1 || !strings.HasSuffix(left[0], " sleep 1051") {
			return errLeft
		}
		return nil
	}); err != nil {
		t.Errorf("after the disconnect, the pod shows %q; want sleep 1051, which a container runtime keeps", left)
	}
}

// inPod looks at p's processes from inside it.
func (c *cluster) inPod(p *pod) inPod {
	return inPod{target: p.target(c, ""), kubectl: []string{"kubectl", "--kubeconfig", c.kubeconfig}}
}

// workspace is a directory in the pod's container for the exec server's
// --cwd.
func (p *pod) workspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(p.ctr.root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// target is the pod as acpterm's --remote names it, with the cluster's
// context.
func (p *pod) target(c *cluster, dir string) remote.Target {
	s := "k8s://" + c.context + "/" + p.Namespace + "/" + p.Name + "/" + p.Container
	if dir != "" {
		s += ":" + dir
	}
	t, err := remote.ParseTarget(s)
	if err != nil {
		panic(err)
	}
	return t
}

// commandOptions make kubectl use the cluster's kubeconfig.
func (c *cluster) commandOptions() *remote.CommandOptions {
	return &remote.CommandOptions{ToolArgs: []string{"--kubeconfig", c.kubeconfig}}
}

// dialPod copies local into the pod with Install and starts the exec
// server there in ws, through kubectl exec -i.
func dialPod(t testing.TB, c *cluster, p *pod, ws, local string, serverArgs ...string) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	return dial(t, p.target(c, ws), c.commandOptions(), local, serverArgs...)
}

// dial copies local to the target with Install and starts the exec server
// there through the target's tool.
func dial(t testing.TB, tg remote.Target, copts *remote.CommandOptions, local string, serverArgs ...string) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	in, err := remote.Install(testCtx(t), tg, copts, &remote.InstallOptions{Local: local})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(in)
	copts.Binary = in.Path
	copts.ServerArgs = serverArgs
	cmd, err := remote.Command(tg, copts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := remote.NewClient(testCtx(t), conn, nil)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("NewClient through kubectl exec: %v; kubectl said: %s", err, conn.Stderr())
	}
	t.Logf("exec server answered its hello %v after kubectl exec started", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = cl.Close() })
	return cl, conn, in
}

// targetVar names a pod of a real cluster for TestKubernetesTarget.
const targetVar = "ACPTERM_K8S_TARGET"

// TestKubernetesTarget runs the same contract in a pod of a real cluster,
// through the user's own kubectl, kubeconfig and context, with acpterm
// copied in by Install (a static build: the pod must have this machine's
// architecture, a POSIX sh with tr, grep, sed and cut, busybox will do,
// and DIR writable by its user). What runs there is seen from inside the
// pod, through kubectl exec:
//
//	ACPTERM_K8S_TARGET=k8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER]:DIR go test -run KubernetesTarget -v . (in k8stest/)
func TestKubernetesTarget(t *testing.T) {
	s := os.Getenv(targetVar)
	if s == "" {
		t.Skipf("%s=k8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER]:DIR runs the contract in that pod of a real cluster", targetVar)
	}
	tg, err := remote.ParseTarget(s)
	if err != nil || tg.Kind != remote.Kubernetes || tg.Dir == "" {
		t.Fatalf("%s=%q: want k8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER]:DIR (%v)", targetVar, s, err)
	}
	local := acptermBinary(t, t.TempDir())
	seenFromInside(t, tg, func() *remote.CommandOptions { return &remote.CommandOptions{} }, inPod{target: tg, kubectl: []string{"kubectl"}}, local)
}

// seenFromInside is the contract and the disconnect as TestKubernetesTarget
// runs them: through kubectl with copts, what runs in the pod seen only
// from inside it (pl).
func seenFromInside(t *testing.T, tg remote.Target, copts func() *remote.CommandOptions, pl inPod, local string) {
	t.Run("contract", func(t *testing.T) {
		cl, _, _ := dial(t, tg, copts(), local)
		h := cl.Hello()
		t.Logf("exec server in %s: %s/%s, cwd %s, isolation %s, sandbox %s", tg, h.OS, h.Arch, h.DefaultCwd, h.Isolation, h.Sandbox.Mode)
		if got := pl.servers(t); len(got) != 1 {
			t.Errorf("exec servers in the pod: %q, want one", got)
		}
		contract(t, cl, h.DefaultCwd, pl)
		if err := cl.Close(); err != nil {
			t.Logf("closing the exec server's connection: %v", err)
		}
	})
	t.Run("disconnect", func(t *testing.T) {
		cl, conn, _ := dial(t, tg, copts(), local)
		disconnect(t, cl, conn, pl)
	})
}

// contract is the terminal contract of the remote package's ssh and
// podman tests, against a client whose exec server runs in ws; the
// processes are seen by their markers, there being no PID namespace
// between the test and the container.
func contract(t *testing.T, c *remote.Client, ws string, pl place) {
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
		// kubectl exec alone would say 137 here; the exec server says
		// what happened.
		id := create(t, c, &acp.CreateTerminalRequest{Command: "kill -KILL $$"})
		if st := waitExit(t, c, id); st.Signal == nil || *st.Signal != "SIGKILL" || st.ExitCode != nil {
			t.Errorf("status %v, want SIGKILL and no exit code", st)
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
		if left := waitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
			t.Errorf("after release, still running: %v", left)
		}
	})
	t.Run("tree gone after release, setsid included", func(t *testing.T) {
		marker := newMarker(t)
		id := create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "setsid sleep 1032 & sleep 1033 & echo ok; wait"}, marker))
		waitMarked(t, pl, marker, 3)
		if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
			t.Fatal(err)
		}
		if left := waitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
			t.Errorf("after release, still running: %v", left)
		}
	})
}

// disconnect kills kubectl (kill -9) under a command that ignores SIGTERM
// and has a setsid descendant: within 2 s nothing is left in the pod's
// container, the exec server included, and a wait in flight fails with
// ErrDisconnected instead of hanging.
func disconnect(t *testing.T, c *remote.Client, conn *remote.Conn, pl place) {
	marker := newMarker(t)
	create(t, c, withMarker(&acp.CreateTerminalRequest{Command: "trap '' TERM; setsid sleep 1041 & while :; do sleep 1; done"}, marker))
	waitMarked(t, pl, marker, 3)
	waitErr := make(chan error, 1)
	go func() {
		_, err := c.WaitForTerminalExit(context.Background(), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: "x"})
		waitErr <- err
	}()
	if err := conn.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if left := waitNoneMarked(t, pl, marker, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after kill -9 of kubectl, still running in the pod: %v", left)
	} else {
		t.Logf("the command's processes gone %v after kill -9 of kubectl", time.Since(start).Round(time.Millisecond))
	}
	if left := waitGone(2*time.Second, func() []string { return pl.servers(t) }); len(left) > 0 {
		t.Errorf("after the disconnect, still running in the pod: %v", left)
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

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// markerVar holds a value unique to one test in the environment of the
// commands it starts, so that /proc shows which are still alive.
const markerVar = "K8STEST_MARKER"

func newMarker(t testing.TB) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func withMarker(req *acp.CreateTerminalRequest, marker string) *acp.CreateTerminalRequest {
	req.Env = append(req.Env, acp.EnvVariable{Name: markerVar, Value: marker})
	return req
}

func create(t testing.TB, c *remote.Client, req *acp.CreateTerminalRequest) acp.TerminalID {
	t.Helper()
	if req.SessionID == "" {
		req.SessionID = "s"
	}
	resp, err := c.CreateTerminal(testCtx(t), req)
	if err != nil {
		t.Fatalf("CreateTerminal(%q): %v", req.Command, err)
	}
	return resp.TerminalID
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
