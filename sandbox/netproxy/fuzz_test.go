package netproxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// FuzzRequest sends arbitrary bytes to a proxy that allows one name and
// checks that it only ever connects to that name's address after
// resolving it, never resolves another name, and answers (or closes)
// within its handshake timeout.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
		"CONNECT other.example.com:443 HTTP/1.1\r\n\r\n",
		"CONNECT 127.0.0.2:443 HTTP/1.1\r\n\r\n",
		"GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"GET http://other.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"GET http://api.example.com/ HTTP/1.1\r\nHost: other.example.com\r\n\r\nGET http://other.example.com/ HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x0fapi.example.com\x01\xbb",
		"\x05\x01\x00\x05\x01\x00\x03\x11other.example.com\x01\xbb",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x02\x01\xbb",
		"\x05\x02\x00\x02\x01\x07acpterm\x03abc\x05\x01\x00\x03\x11other.example.com\x01\xbb",
		"\x05\x01\x02\x01\x00\x00\x05\x01\x00\x03\x0fapi.example.com\x01\xbb",
		"CONNECT other.example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic YWNwdGVybTp4\r\n\r\n",
		"\x05\x02\x02\x00\x05\x03\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x50",
	} {
		f.Add([]byte(s))
	}
	var mu sync.Mutex
	var resolved, dialled int
	var bad []string
	listed := netip.MustParseAddr("127.0.0.2")
	h := startProxy(f, []string{"api.example.com"}, func(o *netproxy.Options) {
		o.HandshakeTimeout = 2 * time.Second
		o.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			mu.Lock()
			defer mu.Unlock()
			if host != "api.example.com" {
				bad = append(bad, "resolved "+host)
			}
			resolved++
			return []netip.Addr{listed}, nil
		}
		o.Dial = func(_ context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			dialled++
			if ap, err := netip.ParseAddrPort(addr); err != nil || ap.Addr() != listed || dialled > resolved {
				bad = append(bad, "dialled "+addr)
			}
			return nil, errors.New("the fuzz target connects nowhere")
		}
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
		}()
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("no end within 10s for %q", in)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("%q: %s", in, strings.Join(bad, "; "))
		}
	})
}

// FuzzRules: a pattern either fails with ErrBadPattern or parses, and a
// name pattern without wildcard or port then allows its own name.
func FuzzRules(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:443", "[::1]:80", "1.2.3.4", "*", "a..b", "x:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r, err := netproxy.ParseRules([]string{p})
		if err != nil {
			if !errors.Is(err, netproxy.ErrBadPattern) {
				t.Fatalf("%q: %v", p, err)
			}
			return
		}
		if strings.ContainsAny(p, ":*") {
			return
		}
		tg, err := netproxy.ParseTarget(strings.TrimSpace(p), 443)
		if err != nil {
			t.Fatalf("%q parses as a pattern but not as a host: %v", p, err)
		}
		if !r.Allows(tg) {
			t.Fatalf("%q does not allow itself", p)
		}
	})
}
