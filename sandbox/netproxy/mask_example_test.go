package netproxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// A Masker in front of an API: the client holds only the sentinel, the
// API receives the key. (Had the API written the key back, the client
// would read the sentinel.)
func ExampleMasker() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "the API got the key for %s: %v", r.URL.Path, r.Header.Get("X-Api-Key") == "sk-real-key")
	}))
	defer api.Close()
	upstream, _ := url.Parse(api.URL)
	m, err := netproxy.NewMasker(netproxy.MaskOptions{Upstream: upstream,
		Secrets: []netproxy.Secret{{Sentinel: "acpterm-masked-1234", Value: "sk-real-key"}}})
	if err != nil {
		panic(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error)
	go func() { done <- m.Serve(l) }()
	defer func() { m.Close(); <-done }()

	// What the sandboxed client does: its base URL is the Masker's.
	req, _ := http.NewRequest("POST", "http://"+l.Addr().String()+"/v1/messages", nil)
	req.Header.Set("X-Api-Key", "acpterm-masked-1234")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b))
	// Output: the API got the key for /v1/messages: true
}
