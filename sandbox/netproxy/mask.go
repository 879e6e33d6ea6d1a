package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Masked credentials. A sandboxed agent that needs an API key gets a
// sentinel in its place and a base URL that leads to a Masker, which
// runs outside the sandbox: the Masker forwards each request to the one
// upstream it was made for, with the sentinel replaced by the real key in
// the request's headers. The key never enters the sandbox, so nothing
// there (the agent's own shell commands included) can read it or send it
// anywhere else; a request carrying the sentinel to another host carries
// the sentinel.

// Defaults of MaskOptions.
const (
	DefaultMaskMaxConns    = 64
	DefaultMaskIdleTimeout = 90 * time.Second
)

// Secret is one masked key: what the sandbox holds (Sentinel) and what
// the upstream gets (Value).
type Secret struct {
	Sentinel string
	Value    string
}

// MaskOptions configure a Masker.
type MaskOptions struct {
	// Upstream is where every request goes: its scheme ("https" or
	// "http") and host. Its path is not joined: a request keeps the path
	// and query its client sent, so a client whose base URL is the
	// Masker's address followed by Upstream's path reaches the same
	// URLs it would have reached directly.
	Upstream *url.URL
	// Secrets are replaced, sentinel by value, in the request headers,
	// and value by sentinel in the response's headers and body (an
	// upstream that echoes a key in an error does not hand it to the
	// sandbox).
	Secrets []Secret
	// Transport makes the upstream requests; nil is a clone of
	// http.DefaultTransport (the environment's proxy, TLS, HTTP/2).
	Transport http.RoundTripper
	// MaxConns bounds the client connections served at once; past it the
	// Masker stops accepting until one ends. 0 is DefaultMaskMaxConns.
	MaxConns int
	// MaxHeaderBytes bounds a request's head; a larger one is answered
	// 431. 0 is DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// HandshakeTimeout bounds the time to send a request head; 0 is
	// DefaultHandshakeTimeout. IdleTimeout bounds the time between
	// kept-alive requests; 0 is DefaultMaskIdleTimeout. Responses
	// themselves (a model's stream) have no time limit.
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration
}

// A Masker is an HTTP endpoint that forwards to one upstream and puts
// the real keys back in place of their sentinels. Responses are streamed
// (server-sent events are flushed as they come), never held whole.
type Masker struct {
	upstream *url.URL
	unmask   *strings.Replacer // sentinel → value, request headers
	remask   *strings.Replacer // value → sentinel, response headers
	secrets  []Secret
	srv      *http.Server
	own      *http.Transport // closed with the Masker when it made it
	maxConns int
	mu       sync.Mutex
	closed   bool           // Close has begun: no request is taken on
	handlers sync.WaitGroup // requests being served, joined by Close
}

// NewMasker checks o and makes a Masker; Serve serves it on a listener.
func NewMasker(o MaskOptions) (*Masker, error) {
	if o.Upstream == nil || (o.Upstream.Scheme != "https" && o.Upstream.Scheme != "http") || o.Upstream.Host == "" {
		return nil, errors.New("netproxy: Masker: the upstream must be an http or https URL with a host")
	}
	if o.Upstream.User != nil {
		return nil, errors.New("netproxy: Masker: the upstream URL must not carry a user or password")
	}
	if len(o.Secrets) == 0 {
		return nil, errors.New("netproxy: Masker: no secrets")
	}
	var un, re []string
	for i, s := range o.Secrets {
		if err := checkSecret(s, o.Secrets[:i]); err != nil {
			return nil, err
		}
		un = append(un, s.Sentinel, s.Value)
		re = append(re, s.Value, s.Sentinel)
	}
	m := &Masker{upstream: &url.URL{Scheme: o.Upstream.Scheme, Host: o.Upstream.Host},
		unmask: strings.NewReplacer(un...), remask: strings.NewReplacer(re...), secrets: o.Secrets,
		maxConns: o.MaxConns}
	if m.maxConns <= 0 {
		m.maxConns = DefaultMaskMaxConns
	}
	tr := o.Transport
	if tr == nil {
		m.own = http.DefaultTransport.(*http.Transport).Clone()
		m.own.MaxResponseHeaderBytes = 1 << 20
		tr = m.own
	}
	rp := &httputil.ReverseProxy{
		Rewrite:        m.rewrite,
		Transport:      tr,
		FlushInterval:  -1,
		ModifyResponse: m.scrubResponse,
		ErrorHandler:   m.upstreamFailed,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	m.srv = &http.Server{
		Handler:           m.handler(rp),
		MaxHeaderBytes:    orDefault(o.MaxHeaderBytes, DefaultMaxHeaderBytes),
		ReadHeaderTimeout: orDefault(o.HandshakeTimeout, DefaultHandshakeTimeout),
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultMaskIdleTimeout),
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return m, nil
}

// checkSecret refuses a secret the rewriting could not keep apart from
// the others, or whose value cannot stand in a header.
func checkSecret(s Secret, before []Secret) error {
	if s.Sentinel == "" || s.Value == "" {
		return errors.New("netproxy: Masker: a secret's sentinel and value must not be empty")
	}
	if !validHeaderValue(s.Value) || !validHeaderValue(s.Sentinel) {
		return errors.New("netproxy: Masker: a secret or sentinel holds a control character, which no header may")
	}
	if strings.Contains(s.Value, s.Sentinel) || strings.Contains(s.Sentinel, s.Value) {
		return errors.New("netproxy: Masker: a secret and its sentinel must not contain one another")
	}
	for _, b := range before {
		for _, x := range []string{b.Sentinel, b.Value} {
			for _, y := range []string{s.Sentinel, s.Value} {
				if strings.Contains(x, y) || strings.Contains(y, x) {
					return errors.New("netproxy: Masker: two secrets or sentinels overlap")
				}
			}
		}
	}
	return nil
}

// validHeaderValue: no control character but tab (RFC 9110 field-value).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// handler refuses what is not a request for the upstream: CONNECT
// (the Masker is no tunnel).
func (m *Masker) handler(rp *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			http.Error(w, "acpterm key mask: closing", http.StatusServiceUnavailable)
			return
		}
		m.handlers.Add(1) // before Close's Wait: both under mu
		m.mu.Unlock()
		defer m.handlers.Done()
		if r.Method == http.MethodConnect {
			http.Error(w, "acpterm key mask: CONNECT is not served here", http.StatusMethodNotAllowed)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// rewrite sends the request to the upstream, whatever URL or Host the
// client named, with the sentinels in its headers replaced. Accept-Encoding
// is left to the transport, which then decodes the body itself, so that
// scrubResponse sees the text an echoed key would be in.
func (m *Masker) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme, out.URL.Host, out.URL.User = m.upstream.Scheme, m.upstream.Host, nil
	out.Host = ""
	out.Header.Del("Accept-Encoding")
	m.Unmask(out.Header)
}

// Unmask replaces, in h's values, each sentinel by its key. Names are
// left as they are.
func (m *Masker) Unmask(h http.Header) { replaceValues(h, m.unmask, m.secrets, true) }

// Remask replaces, in h's values, each key by its sentinel.
func (m *Masker) Remask(h http.Header) { replaceValues(h, m.remask, m.secrets, false) }

func replaceValues(h http.Header, r *strings.Replacer, secrets []Secret, sentinels bool) {
	for name, vs := range h {
		for i, v := range vs {
			for _, s := range secrets {
				find := s.Value
				if sentinels {
					find = s.Sentinel
				}
				if strings.Contains(v, find) {
					vs[i] = r.Replace(v)
					break
				}
			}
		}
		h[name] = vs
	}
}

// scrubResponse puts the sentinels back in place of any key in the
// response's headers and body.
func (m *Masker) scrubResponse(resp *http.Response) error {
	m.Remask(resp.Header)
	m.Remask(resp.Trailer)
	if resp.Body != nil && resp.Body != http.NoBody {
		var keys, sentinels []string
		for _, s := range m.secrets {
			keys, sentinels = append(keys, s.Value), append(sentinels, s.Sentinel)
		}
		resp.Body = NewScrubber(resp.Body, keys, sentinels)
		// The sentinel's length is not the key's.
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	return nil
}

// upstreamFailed answers 502, naming the upstream and the failure.
func (m *Masker) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	http.Error(w, fmt.Sprintf("acpterm key mask: %s: %v", m.upstream.Host, err), http.StatusBadGateway)
}

// Serve serves requests on l until Close; it returns
// http.ErrServerClosed then. l is closed when Serve returns.
func (m *Masker) Serve(l net.Listener) error {
	return m.srv.Serve(newLimitListener(l, m.maxConns))
}

// Close closes the listeners and every connection, waits for the
// requests being served to end (closing their connections cancels
// them), and closes the upstream connections the Masker's own transport
// keeps.
func (m *Masker) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	err := m.srv.Close()
	m.handlers.Wait()
	if m.own != nil {
		m.own.CloseIdleConnections()
	}
	return err
}

// limitListener stops accepting while n connections are open.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	once sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// NewScrubber returns a reader of r's bytes with every occurrence of
// keys[i] replaced by sentinels[i], read as they come: it holds back
// only a tail that may be the start of a key (shorter than the longest
// key), so a stream's events pass at once.
func NewScrubber(r io.ReadCloser, keys, sentinels []string) io.ReadCloser {
	return &scrubber{r: r, keys: keys, sentinels: sentinels, buf: make([]byte, 32<<10)}
}

type scrubber struct {
	r               io.ReadCloser
	keys, sentinels []string
	buf             []byte
	tail            []byte // read, held back: may be the start of a key
	out             []byte // scrubbed, not yet returned
	err             error
}

func (s *scrubber) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		n, err := s.r.Read(s.buf)
		data := append(s.tail, s.buf[:n]...)
		s.tail = nil
		s.err = err
		s.out = s.scrub(s.out[:0], data, err != nil)
		if n == 0 && err == nil {
			return 0, nil
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// scrub appends data to out with whole keys replaced, and keeps in
// s.tail (unless final) the longest end of it that is the start of a
// key.
func (s *scrubber) scrub(out, data []byte, final bool) []byte {
	for {
		at, k := -1, -1
		for i, key := range s.keys {
			if j := strings.Index(string(data), key); j >= 0 && (at < 0 || j < at) {
				at, k = j, i
			}
		}
		if at < 0 {
			break
		}
		out = append(out, data[:at]...)
		out = append(out, s.sentinels[k]...)
		data = data[at+len(s.keys[k]):]
	}
	hold := 0
	if !final {
		hold = keyPrefixSuffix(data, s.keys)
	}
	out = append(out, data[:len(data)-hold]...)
	s.tail = append([]byte(nil), data[len(data)-hold:]...)
	return out
}

// keyPrefixSuffix is the length of the longest end of data that is a
// proper start of one of keys.
func keyPrefixSuffix(data []byte, keys []string) int {
	best := 0
	for _, k := range keys {
		for n := min(len(k)-1, len(data)); n > best; n-- {
			if string(data[len(data)-n:]) == k[:n] {
				best = n
				break
			}
		}
	}
	return best
}

func (s *scrubber) Close() error { return s.r.Close() }
