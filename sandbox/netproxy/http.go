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
	"strconv"
	"sync"
)

// webServer is the HTTP side: a net/http server (bounded request heads,
// header and idle timeouts, keep-alive) fed the connections that are not
// SOCKS, CONNECT tunnels hijacked from it, and plain requests forwarded
// by httputil.ReverseProxy, which drops the hop-by-hop and Proxy-*
// headers.
type webServer struct {
	p    *Proxy
	srv  *http.Server
	tr   *http.Transport
	l    *chanListener
	once sync.Once
	done chan struct{} // closed when srv.Serve returned
}

func newWebServer(p *Proxy) *webServer {
	w := &webServer{p: p, l: newChanListener(), done: make(chan struct{})}
	w.tr = &http.Transport{
		Proxy:               nil, // never a proxy of the host's
		DialContext:         w.dialUpstream,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     p.opt.HandshakeTimeout,
	}
	w.srv = &http.Server{
		Handler:           w,
		ReadHeaderTimeout: p.opt.HandshakeTimeout,
		IdleTimeout:       p.opt.HandshakeTimeout,
		MaxHeaderBytes:    p.opt.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return w
}

// hand gives c to the HTTP server, starting it on first use; false when
// the proxy is closing.
func (w *webServer) hand(c net.Conn) bool {
	w.once.Do(func() {
		go func() {
			defer close(w.done)
			_ = w.srv.Serve(w.l)
		}()
	})
	return w.l.put(c)
}

func (w *webServer) close() {
	started := true
	w.once.Do(func() { started = false; close(w.done) })
	w.l.Close()
	_ = w.srv.Close()
	if started {
		<-w.done
	}
	w.tr.CloseIdleConnections()
}

func (w *webServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !w.p.enter() {
		http.Error(rw, "acpterm proxy: closing", http.StatusServiceUnavailable)
		return
	}
	defer w.p.wg.Done()
	if r.Method == http.MethodConnect {
		w.connect(rw, r)
		return
	}
	w.forward(rw, r)
}

// connect opens a tunnel: CONNECT host:port.
func (w *webServer) connect(rw http.ResponseWriter, r *http.Request) {
	t, err := targetOf(r.Host, 0)
	if err != nil {
		w.p.deny("connect", t, err.Error())
		http.Error(rw, "acpterm proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	if w.refuse(rw, r, "connect", t) {
		return
	}
	ctx, cancel := w.p.dialContext(r.Context())
	defer cancel()
	up, err := w.p.dial(ctx, t)
	if err != nil {
		w.dialFailed(rw, "connect", t, err)
		return
	}
	hj, ok := rw.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(rw, "acpterm proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !w.p.hold(up) {
		up.Close()
		c.Close()
		return
	}
	defer w.p.drop(up)
	_ = c.SetDeadline(noDeadline)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		c.Close()
		return
	}
	splice(c, brw.Reader, up)
}

// forward sends a plain request (absolute URL) on.
func (w *webServer) forward(rw http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(rw, "acpterm proxy: this is a proxy: send an absolute http:// URL, or CONNECT", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(rw, "acpterm proxy: only http:// is forwarded; use CONNECT for "+r.URL.Scheme, http.StatusBadRequest)
		return
	}
	t, err := targetOf(r.URL.Host, 80)
	if err != nil {
		w.p.deny("http", t, err.Error())
		http.Error(rw, "acpterm proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	if w.refuse(rw, r, "http", t) {
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), permittedKey{}, t.String()))
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host },
		Transport: w.tr,
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(rw http.ResponseWriter, _ *http.Request, err error) {
			w.dialFailed(rw, "http", t, err)
		},
	}
	rp.ServeHTTP(rw, r)
}

// refuse answers 403 when t is not allowed (nor, asked, allowed now).
func (w *webServer) refuse(rw http.ResponseWriter, r *http.Request, proto string, t Target) bool {
	why := w.p.permit(r.Context(), proto, t, w.p.httpClient(r))
	if why == "" {
		return false
	}
	w.p.deny(proto, t, why)
	http.Error(rw, "acpterm proxy: connection to "+t.String()+" refused: "+why, http.StatusForbidden)
	return true
}

// dialFailed answers 403 for a name that leads to a private address, 502
// for anything else.
func (w *webServer) dialFailed(rw http.ResponseWriter, proto string, t Target, err error) {
	if errors.Is(err, errPrivate) {
		why := t.Host + " " + errPrivate.Error()
		w.p.deny(proto, t, why)
		http.Error(rw, "acpterm proxy: connection to "+t.String()+" refused: "+why, http.StatusForbidden)
		return
	}
	http.Error(rw, fmt.Sprintf("acpterm proxy: connecting to %s: %v", t, err), http.StatusBadGateway)
}

// permittedKey marks a forwarded request's context with the target the
// handler let through (perhaps once, when asked).
type permittedKey struct{}

// dialUpstream is the transport's dialer: the rules are checked again
// (the handler checked them first, and marked what it let through), and
// names resolved by the proxy.
func (w *webServer) dialUpstream(ctx context.Context, _, addr string) (net.Conn, error) {
	t, err := targetOf(addr, 0)
	if err != nil {
		return nil, err
	}
	if ok, _ := ctx.Value(permittedKey{}).(string); ok == t.String() {
		return w.p.dial(ctx, t)
	}
	if why := w.p.denyReason(t); why != "" {
		return nil, errors.New(why)
	}
	return w.p.dial(ctx, t)
}

// targetOf reads "host:port" (or "host" with a default port).
func targetOf(authority string, defPort uint16) (Target, error) {
	host, ps, err := net.SplitHostPort(authority)
	if err != nil {
		if defPort == 0 {
			return Target{Host: trimForReport(authority)}, fmt.Errorf("%q is not host:port", trimForReport(authority))
		}
		host, ps = authority, strconv.Itoa(int(defPort))
	}
	n, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || n == 0 {
		return Target{Host: trimForReport(host)}, fmt.Errorf("port %q is not 1-65535", trimForReport(ps))
	}
	t, err := ParseTarget(host, uint16(n))
	if err != nil {
		return Target{Host: trimForReport(host), Port: uint16(n)}, err
	}
	return t, nil
}

// trimForReport keeps what a client sent short in messages and denials.
func trimForReport(s string) string {
	const max = 256
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// chanListener is a net.Listener whose connections are handed to it.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) put(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
