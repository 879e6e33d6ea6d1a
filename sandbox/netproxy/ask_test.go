package netproxy_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// asked is a question put to the test, which answers on reply.
type asked struct {
	q     netproxy.Question
	reply chan netproxy.Decision
}

// askingProxy is a proxy listing api.example.com whose Asker hands each
// question to the test.
func askingProxy(t *testing.T, edit func(*netproxy.Asker)) (*harness, *netproxy.Asker, chan asked) {
	t.Helper()
	qs := make(chan asked)
	ask := &netproxy.Asker{Decide: func(ctx context.Context, q netproxy.Question) netproxy.Decision {
		a := asked{q: q, reply: make(chan netproxy.Decision, 1)}
		select {
		case qs <- a:
		case <-ctx.Done():
			return netproxy.Deny
		}
		select {
		case d := <-a.reply:
			return d
		case <-ctx.Done():
			return netproxy.Deny
		}
	}}
	if edit != nil {
		edit(ask)
	}
	h := startProxy(t, []string{"api.example.com"}, func(o *netproxy.Options) {
		o.Ask = ask
		o.Client = "unnamed"
	})
	return h, ask, qs
}

// oneShot is an HTTP client through the proxy that opens a new
// connection for every request, with the credentials in the proxy URL.
func oneShot(t *testing.T, h *harness, scheme string, cred netproxy.Credentials) *http.Client {
	pu, err := url.Parse(cred.URL(scheme, h.addr))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true, TLSClientConfig: insecureTLS()}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type result struct {
	code int
	body string
	err  error
}

func getAsync(t *testing.T, c *http.Client, u string) chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := c.Get(u)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- result{resp.StatusCode, string(b), err}
	}()
	return ch
}

func TestAskAllowOnceAsksAgain(t *testing.T) {
	for _, scheme := range []string{"http", "socks5"} {
		t.Run(scheme, func(t *testing.T) {
			port := upstream(t, true)
			h, ask, qs := askingProxy(t, nil)
			cred, remove := h.p.AddClient("term_1: curl")
			defer remove()
			c := oneShot(t, h, scheme, cred)
			u := "https://other.example.com:" + port + "/"
			for i := range 2 {
				res := getAsync(t, c, u)
				a := <-qs
				if a.q.Target.String() != "other.example.com:"+port || a.q.Client != "term_1: curl" {
					t.Fatalf("question %d: %+v", i, a.q)
				}
				a.reply <- netproxy.AllowOnce
				if r := <-res; r.err != nil || r.code != 200 || r.body != "hello other.example.com:"+port {
					t.Fatalf("after allow once: %+v", r)
				}
			}
			if g := ask.Granted(); len(g) != 0 {
				t.Errorf("Granted = %v after allow once", g)
			}
		})
	}
}

func TestAskAllowSession(t *testing.T) {
	port := upstream(t, false)
	h, ask, qs := askingProxy(t, nil)
	c := oneShot(t, h, "http", netproxy.Credentials{})
	u := "http://other.example.com:" + port + "/"
	res := getAsync(t, c, u)
	a := <-qs
	if a.q.Client != "unnamed" || a.q.Protocol != "http" {
		t.Errorf("question %+v: want Options.Client for a connection without credentials", a.q)
	}
	a.reply <- netproxy.AllowSession
	if r := <-res; r.code != 200 {
		t.Fatalf("after allow for the session: %+v", r)
	}
	// No question this time: qs is unbuffered and nobody reads it, so a
	// question would block the request until the test's deadline.
	if r := <-getAsync(t, c, u); r.code != 200 {
		t.Fatalf("second request: %+v", r)
	}
	if g := ask.Granted(); len(g) != 1 || g[0] != "other.example.com:"+port {
		t.Errorf("Granted = %v", g)
	}
	// Another port of the same name is another question.
	res = getAsync(t, c, "http://other.example.com:1/")
	a = <-qs
	a.reply <- netproxy.Deny
	if r := <-res; r.code != http.StatusForbidden || !strings.Contains(r.body, "refused when asked") {
		t.Errorf("denied: %+v", r)
	}
}

func TestAskDenyReports(t *testing.T) {
	port := upstream(t, true)
	h, _, qs := askingProxy(t, nil)
	c := oneShot(t, h, "http", netproxy.Credentials{})
	res := getAsync(t, c, "https://other.example.com:"+port+"/")
	(<-qs).reply <- netproxy.Deny
	if r := <-res; r.err == nil {
		t.Fatalf("denied CONNECT went through: %+v", r)
	}
	if d := <-h.denials; d.Host != "other.example.com" || d.Protocol != "connect" || !strings.Contains(d.Reason, "refused when asked") {
		t.Errorf("denial %+v", d)
	}
}

// TestAskOneQuestionPerHost: connections to a host being asked about
// wait for that answer; after "allow once" the next one asks again.
func TestAskOneQuestionPerHost(t *testing.T) {
	port := upstream(t, true)
	h, _, qs := askingProxy(t, nil)
	c := oneShot(t, h, "http", netproxy.Credentials{})
	u := "https://other.example.com:" + port + "/"
	first := getAsync(t, c, u)
	a := <-qs
	second := getAsync(t, c, u)
	// The second connection is accepted and waits: it is not answered
	// while the first question is open, nor asked about.
	select {
	case r := <-second:
		t.Fatalf("second connection answered while the first question is open: %+v", r)
	case b := <-qs:
		t.Fatalf("a second question while the first is open: %+v", b.q)
	case <-time.After(200 * time.Millisecond):
	}
	a.reply <- netproxy.AllowOnce
	if r := <-first; r.code != 200 {
		t.Fatalf("first: %+v", r)
	}
	b := <-qs
	b.reply <- netproxy.AllowSession
	if r := <-second; r.code != 200 {
		t.Fatalf("second: %+v", r)
	}
}

func TestAskTimeout(t *testing.T) {
	port := upstream(t, false)
	h, _, qs := askingProxy(t, func(a *netproxy.Asker) { a.Timeout = 100 * time.Millisecond })
	c := oneShot(t, h, "http", netproxy.Credentials{})
	res := getAsync(t, c, "http://other.example.com:"+port+"/")
	<-qs // asked, never answered
	r := <-res
	if r.code != http.StatusForbidden || !strings.Contains(r.body, "no answer came within 100ms") {
		t.Errorf("unanswered: %+v", r)
	}
}

func TestAskMaxPending(t *testing.T) {
	port := upstream(t, false)
	h, _, qs := askingProxy(t, func(a *netproxy.Asker) { a.MaxPending = 1 })
	c := oneShot(t, h, "http", netproxy.Credentials{})
	first := getAsync(t, c, "http://other.example.com:"+port+"/")
	a := <-qs
	r := <-getAsync(t, c, "http://cdn.example.org:"+port+"/")
	if r.code != http.StatusForbidden || !strings.Contains(r.body, "questions are waiting already") {
		t.Errorf("past MaxPending: %+v", r)
	}
	a.reply <- netproxy.Deny
	<-first
}

// TestAskClientCredentials: the credentials name the client over SOCKS5
// (RFC 1929) too; unknown or removed ones are Options.Client.
func TestAskClientCredentials(t *testing.T) {
	h, _, qs := askingProxy(t, nil)
	cred, remove := h.p.AddClient("term_2: git fetch")
	for _, tc := range []struct {
		user, pass, want string
	}{
		{cred.User, cred.Password, "term_2: git fetch"},
		{cred.User, "forged", "unnamed"},
		{"someone", cred.Password, "unnamed"},
	} {
		c := h.dial(t)
		res := make(chan byte, 1)
		go func() { res <- socksUserPass(t, c, tc.user, tc.pass, "other.example.com", 443) }()
		a := <-qs
		if a.q.Client != tc.want || a.q.Protocol != "socks5" {
			t.Errorf("%s:%s: question %+v, want client %q", tc.user, tc.pass, a.q, tc.want)
		}
		a.reply <- netproxy.Deny
		if code := <-res; code != 2 {
			t.Errorf("reply %d, want 2 (not allowed)", code)
		}
	}
	remove()
	c := oneShot(t, h, "http", cred)
	res := getAsync(t, c, "http://other.example.com:1/")
	a := <-qs
	if a.q.Client != "unnamed" {
		t.Errorf("removed credentials name %q", a.q.Client)
	}
	a.reply <- netproxy.Deny
	<-res
}

// socksUserPass greets offering a user name and password, sends them and
// a CONNECT request for a name, and returns the reply code.
func socksUserPass(t *testing.T, c net.Conn, user, pass, host string, port uint16) byte {
	br := bufio.NewReader(c)
	msg := []byte{5, 2, 0, 2}
	msg = append(msg, 1, byte(len(user)))
	msg = append(msg, user...)
	msg = append(msg, byte(len(pass)))
	msg = append(msg, pass...)
	msg = append(msg, 5, 1, 0, 3, byte(len(host)))
	msg = append(msg, host...)
	msg = binary.BigEndian.AppendUint16(msg, port)
	if _, err := c.Write(msg); err != nil {
		return 0xff
	}
	var rep [2 + 2 + 10]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil || rep[1] != 2 || rep[2] != 1 || rep[3] != 0 {
		return 0xff
	}
	return rep[5]
}
