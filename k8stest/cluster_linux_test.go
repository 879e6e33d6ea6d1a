//go:build linux

package k8stest

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// optInVar turns the tests on.
const optInVar = "ACPTERM_K8S"

// optIn skips the test unless the user asked for it: the first run builds
// kube-apiserver and etcd, which takes minutes and gigabytes.
func optIn(t testing.TB) {
	t.Helper()
	if os.Getenv(optInVar) != "1" {
		t.Skipf("opt-in: %s=1 go test -timeout 60m . (in k8stest/) builds kube-apiserver and etcd once "+
			"(minutes; kept in the user's cache dir under acpterm-k8stest) and runs the remote terminal contract "+
			"through kubectl exec -i against them", optInVar)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("%s=1 but kubectl is not in PATH: %v", optInVar, err)
	}
}

// The programs built from kubebuild/ and where in it they come from.
var kubePrograms = []struct{ name, pkg string }{
	{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"},
	{"etcd", "go.etcd.io/etcd/server/v3"},
}

// kubeBinaries returns the directory that holds kube-apiserver and etcd,
// built from kubebuild/ the first time. It is kept in the user's cache
// directory, keyed by kubebuild's go.mod and go.sum, so that a change of
// version builds anew and nothing else does. A cold build of
// kube-apiserver is 7-8 minutes on two idle cores (36 on two shared with
// other builds) and up to 2.9 GB of memory; with the Go build cache warm
// it is the link alone.
func kubeBinaries(t testing.TB) string {
	t.Helper()
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join("kubebuild", f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "acpterm-k8stest", hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range kubePrograms {
		out := filepath.Join(dir, p.name)
		if _, err := os.Stat(out); err == nil {
			continue
		}
		t.Logf("building %s into %s (minutes, once)", p.pkg, dir)
		start := time.Now()
		// Built beside its place and renamed into it, so that a run that
		// was stopped half-way leaves nothing another run would take.
		tmp := out + ".tmp-" + strconv.Itoa(os.Getpid())
		build := exec.Command("go", "build", "-o", tmp, p.pkg)
		build.Dir = "kubebuild"
		if b, err := build.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			t.Fatalf("go build %s (in kubebuild/): %v\n%s", p.pkg, err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			t.Fatal(err)
		}
		t.Logf("built %s in %v", p.name, time.Since(start).Round(time.Second))
	}
	return dir
}

// acptermBinary builds acpterm from the main module into dir, static
// (CGO_ENABLED=0) so that it runs in a pod whose image has no libc.
func acptermBinary(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "acpterm")
	build := exec.Command("go", "build", "-o", out, "./cmd/acpterm")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building acpterm: %v\n%s", err, b)
	}
	return out
}

// daemon is a server the test started; its cleanup stops it.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startDaemon runs bin with args until the test ends, its output in
// dir/NAME.log. Should the test binary die without its cleanups, the
// kernel kills the daemon too (Pdeathsig).
func startDaemon(t testing.TB, dir, name, bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(d.stop)
	return d
}

// stop asks the daemon to end (SIGTERM), kills it after 10 s, and waits.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// logTail is the end of the daemon's log, for a failure message.
func (d *daemon) logTail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return string(b)
}

// waitReady asks ready until it succeeds; it fails the test when the
// daemon exits first or within passes. Neither server says when it is
// ready other than through the endpoint that ready asks.
func (d *daemon) waitReady(t testing.TB, within time.Duration, ready func() error) {
	t.Helper()
	start := time.Now()
	switch err := poll(d.exited, within, ready); {
	case err == nil:
		t.Logf("%s ready in %v", d.name, time.Since(start).Round(time.Millisecond))
	case errors.Is(err, errGone):
		t.Fatalf("%s exited before it was ready (%v):\n%s", d.name, d.cmd.ProcessState, d.logTail())
	default:
		t.Fatalf("%s not ready after %v: %v\n%s", d.name, within, err, d.logTail())
	}
}

// errGone: what poll waited on went away.
var errGone = errors.New("gone")

// poll calls f every 100 ms until it succeeds, gone is closed (errGone)
// or within passes (f's last error).
func poll(gone <-chan struct{}, within time.Duration, f func() error) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-gone:
			return errGone
		case <-deadline.C:
			return err
		case <-tick.C:
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cluster is a real kube-apiserver with its etcd on 127.0.0.1, one node
// whose exec endpoint the test serves (node), and a kubeconfig for
// kubectl with a context of its own.
type cluster struct {
	dir        string
	server     string // https://127.0.0.1:PORT
	kubeconfig string
	context    string
	admin      *http.Client
	pki        *pki
	node       *node
}

// clusterContext is the kubeconfig context of the test cluster.
const clusterContext = "acpterm-test"

// startCluster starts etcd, kube-apiserver and the node until the test
// ends, and registers the node with the API server.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	bin := kubeBinaries(t)
	c := &cluster{dir: t.TempDir(), context: clusterContext}
	c.pki = newPKI(t, c.dir)

	etcdClient, etcdPeer := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcd := startDaemon(t, c.dir, "etcd", filepath.Join(bin, "etcd"),
		"--name", "default", "--data-dir", filepath.Join(c.dir, "etcd-data"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync")
	etcd.waitReady(t, time.Minute, func() error { return etcdHealthy(etcdURL) })

	serving, servingKey, _ := c.pki.issue(t, "apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth)
	// The API server's identity as a client of the node's exec endpoint.
	kubeletClient, kubeletClientKey, _ := c.pki.issue(t, "apiserver-kubelet-client",
		pkix.Name{CommonName: apiserverKubeletClient, Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth)
	_, _, adminPair := c.pki.issue(t, "admin", pkix.Name{CommonName: "acpterm-test-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth)
	saKey := c.pki.signingKey(t, "service-account")

	port := freePort(t)
	c.server = "https://127.0.0.1:" + strconv.Itoa(port)
	api := startDaemon(t, c.dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		// A loopback address cannot be the kubernetes Service's endpoint.
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file", serving, "--tls-private-key-file", servingKey,
		"--client-ca-file", c.pki.caFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		// The node is reached at the address its status gives, over TLS
		// with a certificate of the test's CA, and the API server shows
		// its own client certificate there.
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-certificate-authority", c.pki.caFile,
		"--kubelet-client-certificate", kubeletClient, "--kubelet-client-key", kubeletClientKey,
		"--enable-priority-and-fairness=false",
		"--profiling=false")
	c.admin = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs:      c.pki.pool,
		Certificates: []tls.Certificate{adminPair},
	}}}
	t.Cleanup(c.admin.CloseIdleConnections)
	api.waitReady(t, 3*time.Minute, func() error { return c.get("/readyz") })

	c.writeKubeconfig(t)
	c.node = startNode(t, c.pki)
	c.registerNode(t)
	return c
}

func etcdHealthy(url string) error {
	// No connection is kept: it would outlive etcd in the idle pool.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"health":"true"`)) {
		return fmt.Errorf("etcd /health: %s %s", resp.Status, b)
	}
	return nil
}

func (c *cluster) get(path string) error { return c.call(http.MethodGet, path, "", nil) }

// call makes one request of the API server as the admin and fails unless
// it succeeds.
func (c *cluster) call(method, path, contentType string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.server+path, rd)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.admin.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return nil
}

// create posts obj to path, asking again while the API server is still
// setting up what obj needs (the default namespace, right after
// /readyz).
func (c *cluster) create(t testing.TB, path string, obj any) {
	t.Helper()
	if err := poll(nil, 30*time.Second, func() error {
		return c.call(http.MethodPost, path, "application/json", obj)
	}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) writeKubeconfig(t testing.TB) {
	t.Helper()
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority: %[3]s
users:
- name: admin
  user:
    client-certificate: %[4]s
    client-key: %[5]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: admin
    namespace: default
current-context: %[1]s
`, c.context, c.server, c.pki.caFile, filepath.Join(c.dir, "admin.crt"), filepath.Join(c.dir, "admin.key"))
	if err := os.WriteFile(c.kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// nodeName is the test cluster's one node.
const nodeName = "acpterm-node"

// registerNode creates the Node whose status sends the API server's exec
// connections to the test's node server, and the default service account
// that admission wants for every pod (no controller manager runs to make
// it).
func (c *cluster) registerNode(t testing.TB) {
	t.Helper()
	c.create(t, "/api/v1/nodes", map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": nodeName},
		"status": map[string]any{
			"addresses":       []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}},
			"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": c.node.port}},
		},
	})
	c.create(t, "/api/v1/namespaces/default/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "default"},
	})
}

// pod is a pod bound to the node, Running, whose one container is a
// directory of the test's with its own processes (see container).
type pod struct {
	Namespace, Name, Container string
	ctr                        *container
}

// containerName is the name of every test pod's one container.
const containerName = "main"

// newPod creates a pod on the node and marks it Running, as a kubelet
// would once its container had started.
func (c *cluster) newPod(t testing.TB, name string) *pod {
	t.Helper()
	p := &pod{Namespace: "default", Name: name, Container: containerName}
	p.ctr = c.node.addContainer(t, p.Namespace+"/"+p.Name+"/"+p.Container)
	base := "/api/v1/namespaces/" + p.Namespace + "/pods"
	c.create(t, base, map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"nodeName":   nodeName,
			"containers": []any{map[string]any{"name": containerName, "image": "localhost/acpterm-test:none"}},
		},
	})
	now := time.Now().UTC().Format(time.RFC3339)
	err := c.call(http.MethodPatch, base+"/"+name+"/status", "application/merge-patch+json", map[string]any{
		"status": map[string]any{
			"phase":      "Running",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": now}},
			"containerStatuses": []any{map[string]any{
				"name": containerName, "image": "localhost/acpterm-test:none", "imageID": "",
				"ready": true, "restartCount": 0,
				"state": map[string]any{"running": map[string]any{"startedAt": now}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubectl runs kubectl with the cluster's kubeconfig and returns its
// stdout, stderr and exit code (-1 when it did not exit by itself).
func (c *cluster) kubectl(t testing.TB, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = stdin
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("kubectl %q: %v", args, err)
	}
	return o.String(), e.String(), code
}
