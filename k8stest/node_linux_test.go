//go:build linux

package k8stest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// apiserverKubeletClient is the common name of the API server's client
// certificate, the only client the node lets in.
const apiserverKubeletClient = "kube-apiserver-kubelet-client"

// node stands in for a kubelet where the API server sends pods/exec:
// https://ADDR/exec/NAMESPACE/POD/CONTAINER?command=...&input=1&output=1,
// with the API server's client certificate. As the kubelet does with a
// CRI runtime, it asks the streaming server for a one-time exec URL and
// hands the connection to it; the streaming server (k8s.io/cri-streaming,
// the code kubelets and container runtimes serve exec with) negotiates
// the stream protocol (SPDY or WebSocket, v1 to v5), multiplexes stdin,
// stdout and stderr, and writes the exit status as a metav1.Status. Only
// the runtime under it is the test's: a container is a directory, and
// exec runs a local process there.
type node struct {
	port   int
	stream streaming.Server
	srv    *http.Server
	served chan struct{}

	mu         sync.Mutex
	containers map[string]*container // by "NAMESPACE/POD/CONTAINER"
}

// startNode serves the node's exec endpoint on 127.0.0.1 over TLS until
// the test ends.
func startNode(t testing.TB, p *pki) *node {
	t.Helper()
	_, _, pair := p.issue(t, "kubelet", pkix.Name{CommonName: nodeName}, x509.ExtKeyUsageServerAuth)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{port: ln.Addr().(*net.TCPAddr).Port, served: make(chan struct{}), containers: map[string]*container{}}
	cfg := streaming.DefaultConfig
	cfg.Addr = ln.Addr().String()
	// The streaming server's own routes, reached only through ServeHTTP's
	// rewrite below, never from outside.
	cfg.BaseURL = &url.URL{Scheme: "https", Host: cfg.Addr, Path: "/cri/"}
	if n.stream, err = streaming.NewServer(cfg, runtime{n}); err != nil {
		t.Fatal(err)
	}
	n.srv = &http.Server{
		Handler: n,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientCAs:    p.pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			// Upgrades (SPDY, WebSocket) are HTTP/1.1.
			NextProtos: []string{"http/1.1"},
		},
	}
	go func() {
		defer close(n.served)
		_ = n.srv.ServeTLS(ln, "", "")
	}()
	t.Cleanup(func() {
		// Connections that were upgraded are the streaming server's; each
		// ends with its exec, and the containers' cleanups (which run
		// first) have ended those.
		_ = n.srv.Close()
		<-n.served
	})
	return n
}

// ServeHTTP is the kubelet's exec endpoint.
func (n *node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != apiserverKubeletClient {
		http.Error(w, "only the API server may exec here", http.StatusForbidden)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/exec/")
	seg := strings.Split(rest, "/")
	if !ok || len(seg) != 3 {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	resp, err := n.stream.GetExec(&runtimeapi.ExecRequest{
		ContainerId: strings.Join(seg, "/"),
		Cmd:         q["command"],
		Tty:         q.Get("tty") == "1",
		Stdin:       q.Get("input") == "1",
		Stdout:      q.Get("output") == "1",
		Stderr:      q.Get("error") == "1",
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery = u.Path, "", ""
	n.stream.ServeHTTP(w, r2)
}

func (n *node) addContainer(t testing.TB, id string) *container {
	t.Helper()
	c := newContainer(t)
	n.mu.Lock()
	n.containers[id] = c
	n.mu.Unlock()
	t.Cleanup(func() {
		n.mu.Lock()
		delete(n.containers, id)
		n.mu.Unlock()
	})
	return c
}

// runtime is the streaming server's Runtime: exec only.
type runtime struct{ n *node }

func (rt runtime) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	rt.n.mu.Lock()
	c := rt.n.containers[id]
	rt.n.mu.Unlock()
	switch {
	case c == nil:
		return fmt.Errorf("no container %s on this node", id)
	case tty:
		return errors.New("this node has no TTYs")
	case len(cmd) == 0:
		return errors.New("no command")
	}
	return c.exec(cmd, in, out, errw)
}

func (runtime) Attach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommand.TerminalSize) error {
	return errors.New("attach is not served here")
}

func (runtime) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("port-forward is not served here")
}

// containerVar marks every process a container runs, by the container's
// ID, so that the test can see what is left in it, setsid descendants and
// orphans included (there is no PID namespace to look into).
const containerVar = "ACPTERM_K8STEST_CONTAINER"

// container is a directory that stands for a container's file system
// (its working directory and HOME) and the processes exec started there.
// Like a container runtime's exec, a process goes on when the connection
// that started it drops: what ends it then is the exec server's own
// dead-man rule, which is what the tests check.
type container struct {
	id   string
	root string
	env  []string

	mu     sync.Mutex
	procs  map[*os.Process]bool
	closed bool
	wg     sync.WaitGroup
}

func newContainer(t testing.TB) *container {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	c := &container{id: hex.EncodeToString(b), root: t.TempDir(), procs: map[*os.Process]bool{}}
	home := filepath.Join(c.root, "root")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	c.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, containerVar + "=" + c.id}
	t.Cleanup(func() {
		if left := c.close(); len(left) > 0 {
			t.Errorf("container %s: still running after its end: %v", c.id, left)
		}
	})
	return c
}

// running lists the container's live processes.
func (c *container) running() []int { return sshtest.Running(containerVar, c.id) }

// waitEmpty waits until the container runs nothing or within passes, and
// returns what still runs.
func (c *container) waitEmpty(within time.Duration) []int {
	return sshtest.WaitNoneRunning(containerVar, c.id, within)
}

// exec runs argv in the container with in, out and errw as its stdio
// and returns how it ended as a container runtime reports it: nil for
// exit 0, utilexec.CodeExitError with the code otherwise, 128+N for
// signal N (what runc and containerd report, and so what kubectl exec
// exits with).
func (c *container) exec(argv []string, in io.Reader, out, errw io.WriteCloser) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = c.root, c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out != nil {
		cmd.Stdout = out
	}
	if errw != nil {
		cmd.Stderr = errw
	}
	// A descendant that keeps stdout open must not hold the exec.
	cmd.WaitDelay = time.Second
	var stdin *os.File
	if in != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		cmd.Stdin, stdin = r, w
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("the container has stopped")
	}
	err := cmd.Start()
	if err == nil {
		c.procs[cmd.Process] = true
		if stdin != nil {
			c.wg.Add(1)
		}
	}
	c.mu.Unlock()
	if err != nil {
		if stdin != nil {
			stdin.Close()
		}
		return err
	}
	if stdin != nil {
		// The stream's stdin ends when the client closes it or the
		// connection drops; the process then sees the end of its input.
		// Copied on its own (the read can outlast the process: the stream
		// closes after the exec returns), joined by close.
		go func() {
			defer c.wg.Done()
			_, _ = io.Copy(stdin, in)
			stdin.Close()
		}()
	}
	err = cmd.Wait()
	c.mu.Lock()
	delete(c.procs, cmd.Process)
	c.mu.Unlock()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if errors.Is(err, exec.ErrWaitDelay) {
			return nil
		}
		return err
	}
	ws := ee.Sys().(syscall.WaitStatus)
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return utilexec.CodeExitError{Err: err, Code: code}
}

// close stops the container: SIGKILL to every exec's process group and
// to whatever else holds the container's mark, then waits for the execs
// and their stdin copies. It returns what is still alive 2 s later.
func (c *container) close() []int {
	c.mu.Lock()
	c.closed = true
	for p := range c.procs {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	c.mu.Unlock()
	for _, pid := range c.running() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	left := c.waitEmpty(2 * time.Second)
	c.wg.Wait()
	return left
}
