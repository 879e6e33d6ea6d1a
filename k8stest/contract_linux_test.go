//go:build linux

package k8stest

import (
	"context"
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
		if !in.Copied || !strings.HasPrefix(in.Path, filepath.Join(p.ctr.root, "root", ".local", "share", "acpterm", "exec-server")+"/") {
			t.Errorf("install: %+v, want a copy in the container's ~/.local/share/acpterm/exec-server", in)
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
		remotetest.Contract(t, cl, ws, sameMachine{ctr: p.ctr}, nil)
	})
	t.Run("seen from inside the pod", func(t *testing.T) {
		p := c.newPod(t, "inside")
		seenFromInside(t, p.target(c, p.workspace(t)), c.commandOptions, c.inPod(p), local)
	})
	t.Run("disconnect", func(t *testing.T) {
		p := c.newPod(t, "disconnect")
		cl, conn, _ := dialPod(t, c, p, p.workspace(t), local)
		remotetest.Disconnect(t, cl, conn, sameMachine{ctr: p.ctr})
		// Nothing at all is left in the container, and what the pod
		// itself shows agrees.
		if left := p.ctr.waitEmpty(2 * time.Second); len(left) > 0 {
			t.Errorf("after the disconnect, still running in the pod's container: %v", left)
		}
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
	marker := remotetest.NewMarker()
	seen := filepath.Join(p.ctr.root, "stdin-closed")
	cmd := exec.Command("kubectl", "--kubeconfig", c.kubeconfig, "exec", "-i", "-n", p.Namespace, p.Name, "--",
		"env", remotetest.MarkerVar+"="+marker, "sh", "-c", "cat >/dev/null; touch "+seen+"; exec sleep 1051")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	remotetest.WaitMarked(t, sameMachine{ctr: p.ctr}, marker, 1)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := poll(nil, 5*time.Second, func() error { _, err := os.Stat(seen); return err }); err != nil {
		t.Fatalf("the command's stdin did not close after kill -9 of kubectl: %v", err)
	}
	// Seen from inside the pod too, as a real cluster's pod would show it.
	var left []string
	if err := poll(nil, 5*time.Second, func() error {
		if left = c.inPod(p).Marked(t, marker); len(left) != 1 || !strings.HasSuffix(left[0], " sleep 1051") {
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
// there, with serverArgs, through the target's tool (remotetest.Dial).
func dial(t testing.TB, tg remote.Target, copts *remote.CommandOptions, local string, serverArgs ...string) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	copts.ServerArgs = serverArgs
	return remotetest.Dial(t, tg, copts, local)
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
		remotetest.Contract(t, cl, h.DefaultCwd, pl, nil)
		if err := cl.Close(); err != nil {
			t.Logf("closing the exec server's connection: %v", err)
		}
	})
	t.Run("disconnect", func(t *testing.T) {
		cl, conn, _ := dial(t, tg, copts(), local)
		remotetest.Disconnect(t, cl, conn, pl)
	})
}

// testCtx and create are remotetest's, for the benchmarks.

func testCtx(t testing.TB) context.Context { return remotetest.Ctx(t) }

func create(t testing.TB, c *remote.Client, req *acp.CreateTerminalRequest) acp.TerminalID {
	t.Helper()
	return remotetest.Create(t, c, req)
}
