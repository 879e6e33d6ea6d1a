package netproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// BenchmarkMask times a request on loopback directly to an upstream
// (with the key) and through a Masker (with the sentinel), side by side
// in each iteration, over kept-alive connections, and reports both and
// the difference: to a plain HTTP upstream, and to a TLS one (the Masker
// then speaks TLS to it, the client plain HTTP to the Masker; the direct
// client TLS).
func BenchmarkMask(b *testing.B) {
	body := "event: message_start\ndata: {\"type\":\"message_start\"}\n\n" + strings.Repeat("event: content_block_delta\ndata: {\"delta\":\"hello\"}\n\n", 20)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != testKey {
			http.Error(w, "no key", 401)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	})
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		b.Run(name, func(b *testing.B) {
			up := httptest.NewUnstartedServer(handler)
			if tls {
				up.StartTLS()
			} else {
				up.Start()
			}
			defer up.Close()
			upTr := up.Client().Transport.(*http.Transport).Clone()
			base := startMasker(b, up.URL, netproxy.MaskOptions{Transport: upTr})
			defer upTr.CloseIdleConnections()
			direct := &http.Client{Transport: up.Client().Transport.(*http.Transport).Clone()}
			via := &http.Client{Transport: &http.Transport{}}
			defer direct.CloseIdleConnections()
			defer via.CloseIdleConnections()
			var tDirect, tMask time.Duration
			for b.Loop() {
				t0 := time.Now()
				post(b, direct, up.URL+"/v1/messages", testKey, len(body))
				t1 := time.Now()
				post(b, via, base+"/v1/messages", testSentinel, len(body))
				t2 := time.Now()
				tDirect += t1.Sub(t0)
				tMask += t2.Sub(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tDirect.Microseconds())/n, "direct-µs/req")
			b.ReportMetric(float64(tMask.Microseconds())/n, "masked-µs/req")
			b.ReportMetric(float64((tMask-tDirect).Microseconds())/n, "added-µs/req")
		})
	}
}

func post(b *testing.B, c *http.Client, u, key string, want int) {
	req, _ := http.NewRequest("POST", u, strings.NewReader(`{"model":"m","stream":true}`))
	req.Header.Set("X-Api-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || int(n) != want {
		b.Fatalf("%s: %s, %d bytes", u, resp.Status, n)
	}
}
