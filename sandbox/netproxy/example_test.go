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
	"strings"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// A proxy that lets one name through. Resolve maps the made-up names to
// a server on loopback, so the example needs no network.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the API\n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	p, err := netproxy.New([]string{"api.example.com"}, &netproxy.Options{
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		AllowPrivate: true, // the names lead to loopback here
		OnDeny:       func(d netproxy.Denial) { fmt.Println("denied:", d.Host, d.Protocol) },
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

	proxyURL, _ := url.Parse("http://" + l.Addr().String())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for _, host := range []string{"api.example.com", "elsewhere.example.com"} {
		resp, err := c.Get("http://" + host + ":" + port + "/")
		if err != nil {
			fmt.Println(err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The server's port changes from run to run.
		fmt.Printf("%s: %d %s", host, resp.StatusCode, strings.ReplaceAll(string(body), port, "PORT"))
	}
	// Output:
	// api.example.com: 200 hello from the API
	// denied: elsewhere.example.com http
	// elsewhere.example.com: 403 acpterm proxy: connection to elsewhere.example.com:PORT refused: elsewhere.example.com:PORT is not on the allow-list (api.example.com)
}
