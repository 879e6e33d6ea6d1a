package netproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

func TestHTTPForward(t *testing.T) {
	port := upstream(t, false)
	h := startProxy(t, []string{"api.example.com"}, nil)
	c := h.client(t, "http")

	code, body, err := get(t, c, "http://api.example.com:"+port+"/")
	if err != nil || code != 200 || body != "hello api.example.com:"+port {
		t.Fatalf("allowed name: %d %q %v", code, body, err)
	}
	code, body, err = get(t, c, "http://other.example.com:"+port+"/x")
	if err != nil || code != http.StatusForbidden {
		t.Fatalf("other name: %d %q %v, want 403", code, body, err)
	}
	for _, want := range []string{"other.example.com:" + port, "api.example.com"} {
		if !strings.Contains(body, want) {
			t.Errorf("403 body %q does not name %q", body, want)
		}
	}
	d := <-h.denials
	if d.Host != "other.example.com" || strconv.Itoa(int(d.Port)) != port || d.Protocol != "http" || d.Time.IsZero() {
		t.Errorf("denial %+v", d)
	}
}

func TestConnectTunnel(t *testing.T) {
	port := upstream(t, true)
	h := startProxy(t, []string{"api.example.com:" + port}, nil)
	c := h.client(t, "http")
	code, body, err := get(t, c, "https://api.example.com:"+port+"/")
	if err != nil || code != 200 || body != "hello api.example.com:"+port {
		t.Fatalf("allowed: %d %q %v", code, body, err)
	}
	if _, _, err := get(t, c, "https://other.example.com:"+port+"/"); err == nil {
		t.Fatal("other name reached")
	}
	if d := <-h.denials; d.Host != "other.example.com" || d.Protocol != "connect" {
		t.Errorf("denial %+v", d)
	}

	// What a client sees of a refusal: 403 naming host and list.
	raw := h.dial(t)
	io.WriteString(raw, "CONNECT api.example.com:1 HTTP/1.1\r\nHost: api.example.com:1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(string(b), "api.example.com:1") || !strings.Contains(string(b), "api.example.com:"+port) {
		t.Errorf("CONNECT to an unlisted port: %d %q", resp.StatusCode, b)
	}
}

func TestSOCKS5(t *testing.T) {
	port := upstream(t, false)
	pn, _ := strconv.Atoi(port)
	h := startProxy(t, []string{"*.cdn.example.org", "127.0.0.1:" + port}, nil)
	c := h.client(t, "socks5") // Go's client sends names unresolved

	code, body, err := get(t, c, "http://a.cdn.example.org:"+port+"/")
	if err != nil || code != 200 || body != "hello a.cdn.example.org:"+port {
		t.Fatalf("subdomain: %d %q %v", code, body, err)
	}
	code, body, err = get(t, c, "http://127.0.0.1:"+port+"/")
	if err != nil || code != 200 {
		t.Fatalf("listed address: %d %q %v", code, body, err)
	}
	for _, tc := range []struct {
		name       string
		cmd, atyp  byte
		addr       []byte
		port       uint16
		want       byte
		wantDenial string
	}{
		{"apex of a wildcard", 1, 3, []byte("cdn.example.org"), uint16(pn), 0x02, "cdn.example.org"},
		{"unlisted name", 1, 3, []byte("api.example.com"), uint16(pn), 0x02, "api.example.com"},
		{"listed address, other port", 1, 1, []byte{127, 0, 0, 1}, 1, 0x02, "127.0.0.1"},
		{"unlisted IPv6 address", 1, 4, netip.IPv6Loopback().AsSlice(), uint16(pn), 0x02, "::1"},
		{"bad name", 1, 3, []byte("a b"), 80, 0x02, "a b"},
		{"BIND", 2, 3, []byte("a.cdn.example.org"), 80, 0x07, "a.cdn.example.org"},
		{"UDP ASSOCIATE", 3, 1, []byte{0, 0, 0, 0}, 0, 0x07, "0.0.0.0"},
		{"listed name", 1, 3, []byte("a.cdn.example.org"), uint16(pn), 0x00, ""},
		{"listed address", 1, 1, []byte{127, 0, 0, 1}, uint16(pn), 0x00, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := socksRequest(t, h.dial(t), tc.cmd, tc.atyp, tc.addr, tc.port)
			if got != tc.want {
				t.Fatalf("reply %#x, want %#x", got, tc.want)
			}
			if tc.wantDenial != "" {
				if d := <-h.denials; d.Host != tc.wantDenial || d.Protocol != "socks5" {
					t.Errorf("denial %+v, want host %q", d, tc.wantDenial)
				}
			}
		})
	}
}

func TestSOCKS5IPv6(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "v6 "+r.Host) })}
	go srv.Serve(l)
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port
	h := startProxy(t, []string{"v6.example.com", "[::1]:" + strconv.Itoa(port)}, nil)
	c := h.client(t, "socks5")
	for _, host := range []string{"v6.example.com", "[::1]"} {
		code, body, err := get(t, c, "http://"+host+":"+strconv.Itoa(port)+"/")
		if err != nil || code != 200 || !strings.HasPrefix(body, "v6 ") {
			t.Errorf("%s: %d %q %v", host, code, body, err)
		}
	}
}

func TestPrivateAddressRefused(t *testing.T) {
	port := upstream(t, false)
	h := startProxy(t, []string{"api.example.com"}, func(o *netproxy.Options) { o.AllowPrivate = false })
	code, body, err := get(t, h.client(t, "http"), "http://api.example.com:"+port+"/")
	if err != nil || code != 403 || !strings.Contains(body, "loopback") {
		t.Fatalf("a name leading to loopback: %d %q %v", code, body, err)
	}
	if d := <-h.denials; d.Host != "api.example.com" {
		t.Errorf("denial %+v", d)
	}
}

func TestHandshakeTimeout(t *testing.T) {
	h := startProxy(t, []string{"api.example.com"}, func(o *netproxy.Options) { o.HandshakeTimeout = 50 * time.Millisecond })
	for _, start := range []string{"", "\x05", "GET http://api.example.com/ HTTP/1.1\r\n"} {
		c := h.dial(t)
		io.WriteString(c, start)
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure, not a hang
		b, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%q: the proxy kept a silent client past its handshake timeout", start)
		}
		_ = b // HTTP may answer 408 first
	}
}

func TestHeaderLimit(t *testing.T) {
	h := startProxy(t, []string{"api.example.com"}, func(o *netproxy.Options) { o.MaxHeaderBytes = 1024 })
	c := h.dial(t)
	go func() {
		io.WriteString(c, "GET http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\nX-Big: ")
		io.WriteString(c, strings.Repeat("a", 64<<10))
		io.WriteString(c, "\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", resp.StatusCode)
	}
}

func TestMaxConns(t *testing.T) {
	port := upstream(t, false)
	h := startProxy(t, []string{"api.example.com"}, func(o *netproxy.Options) { o.MaxConns = 1 })
	first := h.dial(t)
	first.Write([]byte{5, 1, 0}) // a SOCKS greeting: it holds the one slot
	var m [2]byte
	if _, err := io.ReadFull(first, m[:]); err != nil {
		t.Fatal(err)
	}
	second := h.dial(t)
	second.Write([]byte{5, 1, 0})
	second.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := io.ReadFull(second, m[:]); err == nil {
		t.Fatal("a second connection was served past MaxConns 1")
	}
	first.Close()
	second.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(second, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("once the first ended: %v %v", m, err)
	}
	_ = port
}

func TestCloseEndsTunnels(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	h := startProxy(t, []string{"api.example.com"}, nil)
	c := h.dial(t)
	if rep := socksRequest(t, c, 1, 3, []byte("api.example.com"), uint16(port)); rep != 0 {
		t.Fatalf("reply %#x", rep)
	}
	up := <-accepted
	defer up.Close()
	h.p.Close() // the tunnel is idle both ways: Close must end it anyway
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("client read after Close: %v, want EOF", err)
	}
	up.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := up.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("upstream read after Close: %v, want EOF", err)
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "reset") }

// TestForward: a port forward reaches a listed address; one to an
// address off the list is closed at once and reported.
func TestForward(t *testing.T) {
	port := upstream(t, false)
	pn, _ := strconv.Atoi(port)
	h := startProxy(t, []string{"127.0.0.1:" + port}, nil)
	for _, tc := range []struct {
		to   netip.AddrPort
		want string
	}{
		{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(pn)), "hello 127.0.0.1:" + port},
		{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 1), ""},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- h.p.Forward(l, tc.to) }()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		code, body, err := get(t, c, "http://"+l.Addr().String()+"/")
		switch {
		case tc.want != "" && (err != nil || code != 200 || !strings.HasPrefix(body, "hello ")):
			t.Errorf("forward to %s: %d %q %v", tc.to, code, body, err)
		case tc.want == "" && err == nil:
			t.Errorf("forward to unlisted %s answered %d %q", tc.to, code, body)
		case tc.want == "":
			if d := <-h.denials; d.Protocol != "forward" || d.Port != 1 {
				t.Errorf("denial %+v", d)
			}
		}
		l.Close()
		if err := <-served; err == nil {
			t.Error("Forward returned nil")
		}
	}
}
