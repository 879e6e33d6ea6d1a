package netproxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// A proxy that asks about the hosts that are not on its list, and knows
// which client connects by the credentials in its proxy URL.
func ExampleAsker() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	ask := &netproxy.Asker{Decide: func(_ context.Context, q netproxy.Question) netproxy.Decision {
		fmt.Printf("%s asks for %s: allowed for the session\n", q.Client, q.Target.Host)
		return netproxy.AllowSession
	}}
	p, err := netproxy.New(nil, &netproxy.Options{
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		AllowPrivate: true, // the names lead to loopback here
		Ask:          ask,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	defer func() { p.Close(); <-served }()

	cred, remove := p.AddClient("make test")
	defer remove()
	proxyURL, _ := url.Parse(cred.URL("http", l.Addr().String()))
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for range 2 { // the second request is not asked about
		resp, err := c.Get("http://pkg.example.com:" + port + "/")
		if err != nil {
			fmt.Println(err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s", resp.StatusCode, body)
	}
	fmt.Println(len(ask.Granted()), "granted")
	// Output:
	// make test asks for pkg.example.com: allowed for the session
	// 200 hello
	// 200 hello
	// 1 granted
}
