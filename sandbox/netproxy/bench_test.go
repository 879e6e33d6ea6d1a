package netproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// BenchmarkRequest times a request on loopback directly and through the
// proxy, side by side in each iteration, and reports both and the
// difference: plain HTTP forwarding over kept-alive connections, and a
// fresh tunnel (HTTP CONNECT or SOCKS5) per request against a fresh
// direct connection.
func BenchmarkRequest(b *testing.B) {
	port := upstream(b, false)
	h := startProxy(b, []string{"api.example.com"}, nil)
	target := "http://api.example.com:" + port + "/"
	direct := "http://127.0.0.1:" + port + "/"
	for _, bc := range []struct {
		name, scheme string
		fresh        bool
	}{
		{"http-keepalive", "http", false},
		{"connect-fresh", "http", true},
		{"socks5-fresh", "socks5", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pu, _ := url.Parse(bc.scheme + "://" + h.addr)
			via := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: bc.fresh}
			if bc.scheme == "http" && bc.fresh {
				// Go's client tunnels only https through CONNECT: dial
				// the tunnel by hand and speak plain HTTP in it.
				via = &http.Transport{DisableKeepAlives: true, DialContext: connectDialer(h.addr)}
			}
			plain := &http.Transport{DisableKeepAlives: bc.fresh}
			defer via.CloseIdleConnections()
			defer plain.CloseIdleConnections()
			cv, cd := &http.Client{Transport: via}, &http.Client{Transport: plain}
			var tDirect, tProxy time.Duration
			for b.Loop() {
				t0 := time.Now()
				mustGet(b, cd, direct)
				t1 := time.Now()
				mustGet(b, cv, target)
				t2 := time.Now()
				tDirect += t1.Sub(t0)
				tProxy += t2.Sub(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tDirect.Microseconds())/n, "direct-µs/req")
			b.ReportMetric(float64(tProxy.Microseconds())/n, "proxy-µs/req")
			b.ReportMetric(float64((tProxy-tDirect).Microseconds())/n, "added-µs/req")
		})
	}
}

func mustGet(b *testing.B, c *http.Client, u string) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %s", u, resp.Status)
	}
}

// connectDialer opens each connection as a CONNECT tunnel through proxy.
func connectDialer(proxy string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", proxy)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			c.Close()
			return nil, err
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			c.Close()
			return nil, err
		}
		if resp.StatusCode != 200 {
			c.Close()
			return nil, errors.New("CONNECT: " + resp.Status)
		}
		if br.Buffered() > 0 {
			c.Close()
			return nil, errors.New("CONNECT: bytes after the reply")
		}
		return c, nil
	}
}
