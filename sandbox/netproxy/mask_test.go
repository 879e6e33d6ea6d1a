package netproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

const (
	testKey      = "secret-123"
	testSentinel = "acpterm-masked-0123456789abcdef"
	testToken    = "token-456"
	testSentTok  = "acpterm-masked-fedcba9876543210"
)

// seen is what an upstream received.
type seen struct {
	header http.Header
	host   string
	uri    string
}

// startMasker serves a Masker toward upstream on a loopback port and
// returns its base URL.
func startMasker(t testing.TB, upstream string, o netproxy.MaskOptions) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	o.Upstream = u
	if o.Secrets == nil {
		o.Secrets = []netproxy.Secret{{Sentinel: testSentinel, Value: testKey}, {Sentinel: testSentTok, Value: testToken}}
	}
	m, err := netproxy.NewMasker(o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Serve(l) }()
	t.Cleanup(func() {
		m.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// recorder is an upstream that records each request and answers "ok".
func recorder(t testing.TB) (*httptest.Server, chan seen) {
	ch := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch <- seen{header: r.Header.Clone(), host: r.Host, uri: r.RequestURI}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func do(t *testing.T, c *http.Client, method, u string, h map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestMaskerPutsKeyBack: the upstream gets the keys in place of the
// sentinels, in whichever header they stand, with the client's path and
// query, at its own host; a request without a sentinel arrives as it
// was sent.
func TestMaskerPutsKeyBack(t *testing.T) {
	up, got := recorder(t)
	base := startMasker(t, up.URL, netproxy.MaskOptions{})
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()

	resp := do(t, c, "POST", base+"/v1/messages?beta=true", map[string]string{
		"X-Api-Key": testSentinel, "Authorization": "Bearer " + testSentTok, "X-Other": "keep " + testSentinel + " twice " + testSentinel,
		"Anthropic-Version": "2023-06-01"})
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "ok" {
		t.Fatalf("status %d, body %q", resp.StatusCode, b)
	}
	s := <-got
	for name, want := range map[string]string{"X-Api-Key": testKey, "Authorization": "Bearer " + testToken,
		"X-Other": "keep " + testKey + " twice " + testKey, "Anthropic-Version": "2023-06-01"} {
		if v := s.header.Get(name); v != want {
			t.Errorf("upstream got %s: %q, want %q", name, v, want)
		}
	}
	if s.uri != "/v1/messages?beta=true" || s.host != strings.TrimPrefix(up.URL, "http://") {
		t.Errorf("upstream got %s for host %s", s.uri, s.host)
	}

	// Without a sentinel: unchanged.
	do(t, c, "GET", base+"/v1/models", map[string]string{"X-Api-Key": "something-else"})
	if s := <-got; s.header.Get("X-Api-Key") != "something-else" || s.uri != "/v1/models" {
		t.Errorf("a request without the sentinel arrived as %v %s", s.header, s.uri)
	}
}

// TestMaskerOneUpstream: a request naming another host (absolute URI,
// Host header) still goes to the upstream, and CONNECT is refused: the
// Masker takes the key nowhere else.
func TestMaskerOneUpstream(t *testing.T) {
	up, got := recorder(t)
	other, otherGot := recorder(t)
	base := startMasker(t, up.URL, netproxy.MaskOptions{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	io.WriteString(conn, "GET "+other.URL+"/steal HTTP/1.1\r\nHost: "+strings.TrimPrefix(other.URL, "http://")+"\r\nX-Api-Key: "+testSentinel+"\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if s := <-got; s.uri != "/steal" || s.header.Get("X-Api-Key") != testKey {
		t.Errorf("upstream got %s %v", s.uri, s.header)
	}
	select {
	case s := <-otherGot:
		t.Errorf("the other host got a request: %v", s)
	default:
	}
	io.WriteString(conn, "CONNECT "+strings.TrimPrefix(other.URL, "http://")+" HTTP/1.1\r\nHost: x\r\nX-Api-Key: "+testSentinel+"\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("CONNECT: %d", resp.StatusCode)
	}
}

// TestMaskerStreams: an event the upstream flushed reaches the client
// while the upstream still holds the response open.
func TestMaskerStreams(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "event: message_stop\ndata: {}\n\n")
	}))
	defer up.Close()
	defer close(release)
	base := startMasker(t, up.URL, netproxy.MaskOptions{})
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp := do(t, c, "POST", base+"/v1/messages", map[string]string{"X-Api-Key": testSentinel})
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
}

// TestMaskerScrubsEcho: a key the upstream sends back, in a header or
// the body, reaches the client as its sentinel.
func TestMaskerScrubsEcho(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("X-Api-Key"))
		w.WriteHeader(401)
		io.WriteString(w, `{"error":"invalid key `+r.Header.Get("X-Api-Key")+`"}`+strings.Repeat(".", 100<<10)+r.Header.Get("X-Api-Key"))
	}))
	defer up.Close()
	base := startMasker(t, up.URL, netproxy.MaskOptions{})
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp := do(t, c, "POST", base+"/", map[string]string{"X-Api-Key": testSentinel})
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || resp.Header.Get("X-Echo") != testSentinel || strings.Contains(string(b), testKey) ||
		!strings.HasPrefix(string(b), `{"error":"invalid key `+testSentinel) || !strings.HasSuffix(string(b), testSentinel) {
		t.Errorf("status %d, X-Echo %q, body %.80q…", resp.StatusCode, resp.Header.Get("X-Echo"), b)
	}
}

// TestMaskerBounds: a request head over the limit is refused with 431;
// past MaxConns a connection waits until another ends.
func TestMaskerBounds(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	base := startMasker(t, up.URL, netproxy.MaskOptions{MaxConns: 1, MaxHeaderBytes: 4 << 10})
	addr := strings.TrimPrefix(base, "http://")

	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	io.WriteString(c1, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c1), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 16 KiB header: %v %v", resp, err)
	}
	c1.Close()

	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(held, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	waiting, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	io.WriteString(waiting, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	// Not served while the first holds the one slot: no answer within
	// a while (an absence, so a deadline rather than a wait for a state).
	waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := waiting.Read(make([]byte, 1)); !errors.Is(err, errTimeout(err)) {
		t.Fatalf("the second connection was served past MaxConns: %v", err)
	}
	close(release)
	resp, err = http.ReadResponse(bufio.NewReader(held), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("held: %v %v", resp, err)
	}
	held.Close()
	waiting.SetReadDeadline(time.Time{})
	resp, err = http.ReadResponse(bufio.NewReader(waiting), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("waiting, after the first ended: %v %v", resp, err)
	}
}

// errTimeout returns err when it is a timeout, else a distinct error.
func errTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}

// TestNewMaskerRefuses: options the Masker cannot keep safe.
func TestNewMaskerRefuses(t *testing.T) {
	up, _ := url.Parse("https://api.example.com")
	for name, o := range map[string]netproxy.MaskOptions{
		"no upstream":      {Secrets: []netproxy.Secret{{Sentinel: "s", Value: "v"}}},
		"ftp upstream":     {Upstream: &url.URL{Scheme: "ftp", Host: "x"}, Secrets: []netproxy.Secret{{Sentinel: "s", Value: "v"}}},
		"user in upstream": {Upstream: &url.URL{Scheme: "https", Host: "x", User: url.User("u")}, Secrets: []netproxy.Secret{{Sentinel: "s", Value: "v"}}},
		"no secrets":       {Upstream: up},
		"empty value":      {Upstream: up, Secrets: []netproxy.Secret{{Sentinel: "s"}}},
		"newline in key":   {Upstream: up, Secrets: []netproxy.Secret{{Sentinel: "s", Value: "a\r\nX-Evil: 1"}}},
		"key in sentinel":  {Upstream: up, Secrets: []netproxy.Secret{{Sentinel: "masked-abc", Value: "abc"}}},
		"overlapping":      {Upstream: up, Secrets: []netproxy.Secret{{Sentinel: "s1", Value: "key"}, {Sentinel: "s2", Value: "key2"}}},
	} {
		if _, err := netproxy.NewMasker(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestMaskerCloseMidStream: Close ends a response still streaming, and
// returns once its request has ended (goleak checks the rest).
func TestMaskerCloseMidStream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	m, err := netproxy.NewMasker(netproxy.MaskOptions{Upstream: u, Secrets: []netproxy.Secret{{Sentinel: testSentinel, Value: testKey}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Serve(l) }()
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp := do(t, c, "GET", "http://"+l.Addr().String()+"/stream", nil)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	m.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := io.ReadAll(br); err == nil {
		t.Errorf("the stream ended cleanly after Close; want it cut")
	}
}
