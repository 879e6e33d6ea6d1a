package remote_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
)

// TestAskHostThroughClient: an exec server whose commands reach the
// network through a host list puts a host off the list to a client that
// answers questions (ClientOptions.AskHost): the connection waits for the
// answer, "allow once" lets that one through, the next is asked about
// again and "deny" refuses it. A client that does not answer is never
// asked: the host is refused at once, as before.
func TestAskHostThroughClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	if r := sandbox.Support(); !r.Namespaces || r.LandlockABI == 0 {
		t.Skipf("no sandbox with a network namespace here: %+v", r)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello%s", strings.ReplaceAll(r.URL.Path, "/", "-"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	target := "127.0.0.1:" + port
	// --noproxy '' sends even a loopback address through the proxy,
	// whose refusal is an HTTP error with its reason for a body.
	curl := func(path string) string {
		return "curl -sS --noproxy '' http://" + target + "/" + path
	}

	t.Run("asked", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var asked []string
		answers := []netproxy.Decision{netproxy.AllowOnce, netproxy.Deny}
		var denied []netproxy.Denial
		c := askPair(t, func(d netproxy.Denial) {
			mu.Lock()
			defer mu.Unlock()
			denied = append(denied, d)
		}, func(_ context.Context, q netproxy.Question) netproxy.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, q.Protocol+" "+q.Target.String()+" by "+q.Client)
			d := answers[0]
			answers = answers[1:]
			return d
		})
		if !c.Hello().AskHosts {
			t.Error("the hello does not say the server asks about hosts")
		}
		out := runOn(t, c, curl("once")+"; echo; "+curl("twice"))
		if !strings.Contains(out, "hello-once") || !strings.Contains(out, "was refused when asked") || strings.Contains(out, "hello-twice") {
			t.Errorf("output %q: want the first connection through and the second refused", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 2 {
			t.Fatalf("asked %d times (%q), want 2", len(asked), asked)
		}
		for _, q := range asked {
			if !strings.Contains(q, target+" by ") {
				t.Errorf("question %q does not name %s", q, target)
			}
		}
		// The target's runtime names the command in its proxy
		// credentials: the question carries it.
		if !strings.Contains(asked[0], "curl") {
			t.Errorf("question %q does not name the command", asked[0])
		}
		// The refusal reached the client as a denial, in order with the
		// terminal's events: before its exit was seen.
		if len(denied) != 1 || denied[0].Host != "127.0.0.1" || strconv.Itoa(int(denied[0].Port)) != port ||
			!strings.Contains(denied[0].Reason, "was refused when asked") {
			t.Errorf("denials %+v, want the one refusal of %s", denied, target)
		}
	})

	t.Run("not asked", func(t *testing.T) {
		t.Parallel()
		c := askPair(t, nil, nil)
		out := runOn(t, c, curl("once"))
		if !strings.Contains(out, target+" is not on the allow-list\n") || strings.Contains(out, "hello-once") {
			t.Errorf("output %q: want the connection refused without a question", out)
		}
	})
}

// askPair serves an exec server in this process whose commands are
// confined to a host list that names nothing reachable, and returns a
// client of it with onDeny and askHost as its ClientOptions.OnDeny and
// AskHost.
func askPair(t *testing.T, onDeny func(netproxy.Denial), askHost func(context.Context, netproxy.Question) netproxy.Decision) *remote.Client {
	t.Helper()
	ws := t.TempDir()
	sp := &sandbox.Policy{Mode: sandbox.ReadOnly, Network: sandbox.ProxyNetwork, AllowHosts: []string{"nothing.invalid"}, WithoutMountNamespace: true}
	cend, send := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(ctx, send, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: ws, Policy: &terminal.Policy{Sandbox: sp}}})
	}()
	c, err := remote.NewClient(remotetest.Ctx(t), cend, &remote.ClientOptions{AskHost: askHost, OnDeny: onDeny})
	if err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return c
}

// runOn runs a shell line there and returns its output.
func runOn(t *testing.T, c *remote.Client, line string) string {
	t.Helper()
	id := remotetest.Create(t, c, &acp.CreateTerminalRequest{SessionID: "s", Command: "/bin/sh", Args: []string{"-c", line}})
	remotetest.WaitExit(t, c, id)
	return remotetest.Output(t, c, id).Output
}
