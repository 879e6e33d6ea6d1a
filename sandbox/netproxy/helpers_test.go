package netproxy_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// harness is a proxy on loopback whose names are the test's: Resolve
// maps each to 127.0.0.1, where the test's servers listen, so nothing
// leaves the machine.
type harness struct {
	p       *netproxy.Proxy
	addr    string // the proxy's host:port
	denials chan netproxy.Denial
}

// names are the made-up hosts every test can use.
var names = map[string]netip.Addr{
	"api.example.com":   netip.MustParseAddr("127.0.0.1"),
	"other.example.com": netip.MustParseAddr("127.0.0.1"),
	"a.cdn.example.org": netip.MustParseAddr("127.0.0.1"),
	"cdn.example.org":   netip.MustParseAddr("127.0.0.1"),
	"v6.example.com":    netip.MustParseAddr("::1"),
}

func testResolve(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := names[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("no such host %q in the test's map", host)
}

func startProxy(t testing.TB, allow []string, edit func(*netproxy.Options)) *harness {
	t.Helper()
	h := &harness{denials: make(chan netproxy.Denial, 64)}
	opts := &netproxy.Options{
		Resolve:      testResolve,
		AllowPrivate: true, // the test's names map to loopback
		OnDeny: func(d netproxy.Denial) {
			select {
			case h.denials <- d:
			default:
			}
		},
	}
	if edit != nil {
		edit(opts)
	}
	p, err := netproxy.New(allow, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.p, h.addr = p, l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-served; err != netproxy.ErrClosed {
			t.Errorf("Serve = %v, want ErrClosed", err)
		}
	})
	return h
}

// client is an HTTP client that goes through the proxy with scheme
// ("http" or "socks5").
func (h *harness) client(t testing.TB, scheme string) *http.Client {
	pu, err := url.Parse(scheme + "://" + h.addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	tr.TLSClientConfig = insecureTLS()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// upstream is an HTTP server on loopback that names the host it was
// asked for; with tls, an HTTPS one.
func upstream(t testing.TB, tls bool) (port string) {
	t.Helper()
	hf := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(hf)
	} else {
		s = httptest.NewServer(hf)
	}
	t.Cleanup(s.Close)
	_, port, _ = net.SplitHostPort(s.Listener.Addr().String())
	return port
}

func get(t testing.TB, c *http.Client, u string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// socksRequest does a SOCKS5 greeting and request on c and returns the
// reply code. addr is DST.ADDR as sent (atyp 1, 3 or 4).
func socksRequest(t testing.TB, c net.Conn, cmd, atyp byte, addr []byte, port uint16) byte {
	t.Helper()
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var m [2]byte
	if _, err := io.ReadFull(br, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("method reply %v, %v", m, err)
	}
	req := []byte{5, cmd, 0, atyp}
	if atyp == 3 {
		req = append(req, byte(len(addr)))
	}
	req = append(req, addr...)
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [10]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	return rep[1]
}

func (h *harness) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
