package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// proxyWorld stands for the Internet in the proxy tests: made-up names
// that the proxy (and only the proxy) resolves to loopback servers of
// the test, and the refusals the proxy reported.
type proxyWorld struct {
	port, tlsPort string // the HTTP and HTTPS servers' ports on 127.0.0.1

	mu      sync.Mutex
	denials []netproxy.Denial
}

func newProxyWorld(t *testing.T) *proxyWorld {
	w := &proxyWorld{}
	hf := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "hello %s", r.Host) })
	s, ts := httptest.NewServer(hf), httptest.NewTLSServer(hf)
	t.Cleanup(s.Close)
	t.Cleanup(ts.Close)
	_, w.port, _ = net.SplitHostPort(s.Listener.Addr().String())
	_, w.tlsPort, _ = net.SplitHostPort(ts.Listener.Addr().String())
	return w
}

func (w *proxyWorld) policy(allow ...string) *Policy {
	return &Policy{Mode: ReadOnly, Network: ProxyNetwork, AllowHosts: allow, Proxy: &netproxy.Options{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if strings.HasSuffix(host, ".example.com") {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, fmt.Errorf("%s: not in the test's map", host)
		},
		AllowPrivate: true, // the made-up names lead to loopback
		OnDeny: func(d netproxy.Denial) {
			w.mu.Lock()
			w.denials = append(w.denials, d)
			w.mu.Unlock()
		},
	}}
}

func (w *proxyWorld) denied(host string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.denials {
		if d.Host == host {
			return true
		}
	}
	return false
}

// TestProxyNetwork: under an allow-list a command's curl reaches the
// listed name through the proxy (HTTP, CONNECT, SOCKS5) and not another,
// a direct connection reaches nothing, and the list holds for children.
func TestProxyNetwork(t *testing.T) {
	t.Parallel()
	both(t, testProxyNetwork)
}

func testProxyNetwork(t *testing.T, b box) {
	need(t, true)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl (the Go client below covers the same ground: TestProxyNetworkGoClient)")
	}
	w := newProxyWorld(t)
	p := w.policy("api.example.com")
	for _, tc := range []struct {
		name, script string
		want         string // in the output
		wantCode     int
	}{
		{"http allowed", `curl -sS http://api.example.com:$1/`, "hello api.example.com:", 0},
		{"https allowed", `curl -sSk https://api.example.com:$2/`, "hello api.example.com:", 0},
		{"socks5h allowed", `unset http_proxy HTTP_PROXY; curl -sS http://api.example.com:$1/`, "hello api.example.com:", 0},
		{"http other", `curl -sS -o /dev/null -w '%{http_code}' http://other.example.com:$1/`, "403", 0},
		{"https other", `curl -sSk https://other.example.com:$2/`, "403", 56},
		{"socks5h other", `unset http_proxy HTTP_PROXY; curl -sS http://other.example.com:$1/`, "", 97},
		{"no proxy", `curl -sS --noproxy '*' http://127.0.0.1:$1/`, "", 7},
		{"child", `sh -c 'curl -sS http://api.example.com:$1/; curl -sSf http://other.example.com:$1/ || echo child refused' sh $1`, "child refused", 0},
		{"setsid child", `setsid sh -c 'curl -sS --noproxy "*" --max-time 5 http://127.0.0.1:$1/ || echo direct refused' sh $1`, "direct refused", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := b.sh(t, p, "", "PATH=$(dirname "+curl+"):$PATH; "+tc.script, w.port, w.tlsPort)
			if code != tc.wantCode || !strings.Contains(out, tc.want) {
				t.Errorf("status %d (want %d), output %q (want %q)", code, tc.wantCode, out, tc.want)
			}
			if strings.Contains(tc.name, "allowed") && !strings.Contains(out, "api.example.com:") {
				t.Errorf("output %q", out)
			}
		})
	}
	if !w.denied("other.example.com") {
		t.Error("no denial reported for other.example.com")
	}
}

// TestProxyNetworkGoClient: the same with a Go client that honours the
// proxy variables, where curl is missing.
func TestProxyNetworkGoClient(t *testing.T) {
	t.Parallel()
	both(t, testProxyNetworkGoClient)
}

func testProxyNetworkGoClient(t *testing.T, b box) {
	need(t, true)
	w := newProxyWorld(t)
	p := w.policy("api.example.com")
	if got := b.act(t, p, "", "get", "http://api.example.com:"+w.port+"/"); got != "200 hello api.example.com:"+w.port {
		t.Errorf("allowed: %q", got)
	}
	if got := b.act(t, p, "", "get", "http://other.example.com:"+w.port+"/"); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "api.example.com") {
		t.Errorf("other: %q", got)
	}
}

// TestProxyNetworkNothingElse: a program that ignores the proxy reaches
// nothing: no TCP to the host's loopback or its other addresses, no UDP,
// no name lookups; and it can neither take the proxy's listener nor see
// it among its descriptors.
func TestProxyNetworkNothingElse(t *testing.T) {
	t.Parallel()
	both(t, testProxyNetworkNothingElse)
}

func testProxyNetworkNothingElse(t *testing.T, b box) {
	need(t, true)
	w := newProxyWorld(t)
	p := w.policy("api.example.com")
	b.wantAct(t, p, "", "ECONNREFUSED", "dial", "127.0.0.1:"+w.port) // its own loopback: nobody there
	if ip := hostAddr(); ip.IsValid() {
		l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		b.wantAct(t, p, "", "ENETUNREACH", "dial", l.Addr().String())
	}
	b.wantAct(t, p, "", "EADDRINUSE", "bind", ProxyAddr)
	b.wantAct(t, p, "", "0", "listeners")
	if got := b.act(t, p, "", "lookup", "unlisted.example.com"); strings.HasPrefix(got, "ok") {
		t.Errorf("lookup inside the sandbox: %q", got)
	}
	if got := b.act(t, p, "", "lookup", "api.example.com"); strings.HasPrefix(got, "ok") {
		t.Errorf("lookup of a listed name inside the sandbox: %q (names are the proxy's to resolve)", got)
	}

	// UDP: a datagram from the sandbox to the host's loopback, then one
	// from the test. Loopback delivery is done by the time sendto
	// returns, so if the sandbox's had arrived it would be read first.
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	b.act(t, p, "", "udp", u.LocalAddr().String()) // sends, to its own loopback
	if _, err := u.WriteTo([]byte("from the test"), u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _, err := u.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "from the test" {
		t.Errorf("first datagram %q, %v: the sandbox's reached the host", buf[:n], err)
	}
}

// hostAddr is an address of this machine other than loopback, if any.
func hostAddr() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() {
				return ip.Unmap()
			}
		}
	}
	return netip.Addr{}
}

func TestProxyNetworkBadPattern(t *testing.T) {
	p := &Policy{Network: ProxyNetwork, AllowHosts: []string{"*"}}
	if _, err := p.Wrap(exec.Command("/bin/true")); err == nil || !strings.Contains(err.Error(), "AllowHosts") {
		t.Errorf("Wrap with AllowHosts [*]: %v", err)
	}
	if _, err := p.NewSpawner(); err == nil {
		t.Error("NewSpawner with AllowHosts [*] succeeded")
	}
}

func TestProxyEnv(t *testing.T) {
	env := proxyEnv([]string{"HTTP_PROXY=http://corp:8080", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"}, ProxyAddr, netproxy.Credentials{})
	want := map[string]string{
		"HTTP_PROXY": "http://" + ProxyAddr, "https_proxy": "http://" + ProxyAddr, "ALL_PROXY": "socks5h://" + ProxyAddr,
		"NO_PROXY": noProxyLoopback, "npm_config_https_proxy": "http://" + ProxyAddr,
		"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_KEY_1": "http.proxy", "GIT_CONFIG_VALUE_1": "http://" + ProxyAddr,
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}

// TestProxyNetworkLoopback: a loopback address on the list, with its
// port, is the host's, forwarded to the same address in the sandbox: a
// client that connects directly (NO_PROXY covers the loopback) reaches
// the host's server there, the command cannot bind that port, and its
// own servers on other ports still work. Without a port it is refused.
func TestProxyNetworkLoopback(t *testing.T) {
	t.Parallel()
	both(t, testProxyNetworkLoopback)
}

func testProxyNetworkLoopback(t *testing.T, b box) {
	need(t, true)
	w := newProxyWorld(t)
	p := w.policy("127.0.0.1:" + w.port)
	if got := b.act(t, p, "", "get", "http://127.0.0.1:"+w.port+"/"); got != "200 hello 127.0.0.1:"+w.port {
		t.Errorf("the listed host loopback port: %q", got)
	}
	b.wantAct(t, p, "", "EADDRINUSE", "bind", "127.0.0.1:"+w.port)
	b.wantAct(t, p, "", "ECONNREFUSED", "dial", "127.0.0.1:"+w.tlsPort) // not listed: its own loopback
	b.wantAct(t, p, "", "ok", "loopback")
	bad := w.policy("127.0.0.1")
	if _, err := bad.Wrap(exec.Command("/bin/true")); err == nil || !strings.Contains(err.Error(), "needs a port") {
		t.Errorf("Wrap with a loopback address without a port: %v", err)
	}
	_ = os.Environ
}

// TestProxyNetworkNotStarted: a command wrapped and never started (as a
// caller that only plans does) leaves nothing behind once Cleanup ran:
// the proxy's goroutine waiting for the listener ends (goleak checks).
func TestProxyNetworkNotStarted(t *testing.T) {
	need(t, true)
	w := newProxyWorld(t)
	for range 3 {
		a, err := w.policy("api.example.com", "127.0.0.1:"+w.port).Wrap(exec.Command("/bin/true"))
		if err != nil {
			t.Fatal(err)
		}
		if a.ProxyAddr != ProxyAddr || len(a.AllowHosts) != 2 {
			t.Errorf("Applied: proxy %q, hosts %q", a.ProxyAddr, a.AllowHosts)
		}
		if err := a.Cleanup(); err != nil {
			t.Fatal(err)
		}
	}
}
