package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxConns         = 256
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultDialTimeout      = 10 * time.Second
	DefaultMaxHeaderBytes   = 64 << 10
)

// Options are a Proxy's hooks and limits. The zero value (or nil) means
// the defaults.
type Options struct {
	// Resolve looks a name up; nil is net.DefaultResolver.LookupNetIP
	// with network "ip". The command never resolves a name itself.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address ("ip:port", always an address: names
	// are resolved first); nil is a net.Dialer's DialContext. Tests map
	// names to loopback servers with Resolve and Dial.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// AllowPrivate lets a name resolve to a loopback, private,
	// link-local or unspecified address. Off by default: a listed name
	// whose DNS an attacker controls must not lead to the host's own
	// services or its LAN. An address listed as such is always reachable.
	AllowPrivate bool
	// OnDeny, if set, is called for each refused connection, from the
	// connection's goroutine; it must not block for long.
	OnDeny func(Denial)
	// Ask, if set, decides about a connection to a host that is not on
	// the list instead of refusing it at once (see Asker); proxies that
	// share one share its questions and what it allowed for the session.
	Ask *Asker
	// Client names, in Ask's Questions, the connections that present no
	// credentials of AddClient's: for a proxy that serves one command,
	// that command.
	Client string

	// MaxConns bounds the connections served at once; past it the proxy
	// stops accepting until one ends (the listener's backlog holds the
	// rest). 0 is DefaultMaxConns.
	MaxConns int
	// HandshakeTimeout bounds the time a client has to send a complete
	// request (SOCKS greeting and request, HTTP request head), and the
	// idle time between two plain HTTP requests. 0 is the default.
	HandshakeTimeout time.Duration
	// DialTimeout bounds a resolve and connect. 0 is the default.
	DialTimeout time.Duration
	// MaxHeaderBytes bounds an HTTP request's head (request line and
	// headers). 0 is DefaultMaxHeaderBytes.
	MaxHeaderBytes int
}

// Denial is one refused connection.
type Denial struct {
	Time     time.Time `json:"time"`
	Protocol string    `json:"protocol"` // "http", "connect" or "socks5"
	Host     string    `json:"host"`     // as the command gave it (normalized), or "" when unreadable
	Port     uint16    `json:"port"`
	Reason   string    `json:"reason"`
}

func (d Denial) String() string {
	return fmt.Sprintf("%s %s: %s", d.Protocol, net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port))), d.Reason)
}

// A Proxy serves HTTP (CONNECT and plain forwarding) and SOCKS5 on the
// same listeners, and connects only to the hosts its Rules allow.
type Proxy struct {
	rules *Rules
	opt   Options
	sem   chan struct{}
	web   *webServer

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	clients   map[string]string // AddClient's passwords, to whom they name
	wg        sync.WaitGroup
	done      chan struct{}
	ctx       context.Context // cancelled by Close: dials in flight end
	cancel    context.CancelFunc
}

// New returns a proxy allowing the host patterns in allow (see
// ParseRules); opts may be nil.
func New(allow []string, opts *Options) (*Proxy, error) {
	rules, err := ParseRules(allow)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rules: rules, listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	if opts != nil {
		p.opt = *opts
	}
	if p.opt.MaxConns <= 0 {
		p.opt.MaxConns = DefaultMaxConns
	}
	if p.opt.HandshakeTimeout <= 0 {
		p.opt.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if p.opt.DialTimeout <= 0 {
		p.opt.DialTimeout = DefaultDialTimeout
	}
	if p.opt.MaxHeaderBytes <= 0 {
		p.opt.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if p.opt.Resolve == nil {
		p.opt.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.opt.Dial == nil {
		d := &net.Dialer{}
		p.opt.Dial = d.DialContext
	}
	p.sem = make(chan struct{}, p.opt.MaxConns)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.web = newWebServer(p)
	return p, nil
}

// Rules is the allow-list.
func (p *Proxy) Rules() *Rules { return p.rules }

// ErrClosed is returned by Serve once Close was called.
var ErrClosed = errors.New("netproxy: proxy closed")

// Serve accepts connections on l until l fails or Close is called, and
// serves each in a goroutine of its own. It closes l. The error is
// ErrClosed after Close, else the listener's.
func (p *Proxy) Serve(l net.Listener) error {
	if !p.register(l) {
		return ErrClosed
	}
	return p.accept(l, p.serveConn)
}

// register makes l one Close closes; false (and l closed) when the
// proxy is closed already.
func (p *Proxy) register(l net.Listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return false
	}
	p.listeners[l] = struct{}{}
	return true
}

// accept is the loop of Serve and Forward: it takes a slot and accepts,
// and hands each connection, tracked, to handle in a goroutine of its
// own, which must give back the slot, the tracking and p.wg (release).
func (p *Proxy) accept(l net.Listener, handle func(net.Conn)) error {
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
		l.Close()
	}()
	for {
		select {
		case p.sem <- struct{}{}:
		case <-p.done:
			return ErrClosed
		}
		c, err := l.Accept()
		if err != nil {
			<-p.sem
			if p.isClosed() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !p.track(c) {
			<-p.sem
			c.Close()
			return ErrClosed
		}
		go handle(c)
	}
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers c (and one goroutine) unless the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// release ends an accepted connection: its tracking, its slot and its
// goroutine's count.
func (p *Proxy) release(c net.Conn) {
	p.untrack(c)
	<-p.sem
	p.wg.Done()
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops every Serve, closes every connection (with the upstream
// connections they carry) and waits for their goroutines. It is
// idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.done)
	p.cancel()
	for l := range p.listeners {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.web.close()
	p.wg.Wait()
	return nil
}

// serveConn tells SOCKS5 from HTTP by the first byte, and serves SOCKS
// itself or hands the connection to the HTTP server. It owns c's slot
// (p.sem) and goroutine count until it returns or hands c over; an HTTP
// connection gives both back when closed (see ownedConn).
func (p *Proxy) serveConn(c net.Conn) {
	release := func() { p.release(c) }
	_ = c.SetDeadline(time.Now().Add(p.opt.HandshakeTimeout))
	br := bufio.NewReaderSize(c, 4096)
	first, err := br.Peek(1)
	if err != nil {
		release()
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		release()
		return
	}
	_ = c.SetDeadline(time.Time{}) // the HTTP server sets its own
	if !p.web.hand(&ownedConn{Conn: c, r: br, release: release}) {
		release()
	}
}

// ownedConn is an accepted connection handed to the HTTP server: reads
// start with what was peeked, and the first Close gives the connection's
// slot back.
type ownedConn struct {
	net.Conn
	r       io.Reader
	once    sync.Once
	release func()
}

func (c *ownedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *ownedConn) Close() error {
	c.once.Do(c.release)
	return nil
}

// deny records a refusal.
func (p *Proxy) deny(proto string, t Target, reason string) {
	if p.opt.OnDeny != nil {
		p.opt.OnDeny(Denial{Time: time.Now(), Protocol: proto, Host: t.Host, Port: t.Port, Reason: reason})
	}
}

// denyReason is why t is refused, or "" when it is allowed (on the
// list, or granted for the session by Ask).
func (p *Proxy) denyReason(t Target) string {
	if p.rules.Allows(t) || p.opt.Ask.isGranted(t) {
		return ""
	}
	return fmt.Sprintf("%s is not on the allow-list (%s)", t, p.rules)
}

// errPrivate: the name resolves only to addresses AllowPrivate guards.
var errPrivate = errors.New("resolves only to loopback, private or link-local addresses")

// dial connects to an allowed target: an address as it is, a name
// through Resolve, trying each usable address in turn.
func (p *Proxy) dial(ctx context.Context, t Target) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opt.DialTimeout)
	defer cancel()
	if t.Addr.IsValid() {
		return p.opt.Dial(ctx, "tcp", netip.AddrPortFrom(t.Addr, t.Port).String())
	}
	addrs, err := p.opt.Resolve(ctx, t.Host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	tried := 0
	for _, a := range addrs {
		a = a.Unmap()
		if !p.opt.AllowPrivate && !public(a) {
			continue
		}
		tried++
		c, err := p.opt.Dial(ctx, "tcp", netip.AddrPortFrom(a, t.Port).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if tried == 0 {
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address for %s", t.Host)
		}
		return nil, errPrivate
	}
	return nil, firstErr
}

// public reports whether a is an address a name may lead to by default.
func public(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() &&
		!a.IsLinkLocalMulticast() && !a.IsUnspecified() && !a.IsMulticast() && !a.IsInterfaceLocalMulticast()
}

// splice copies both ways until either side ends, then closes both.
// head is what the client sent past its request, already read.
func splice(client net.Conn, head io.Reader, upstream net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(upstream, head)
		closeWrite(upstream)
	}()
	_, _ = io.Copy(client, upstream)
	closeWrite(client)
	<-done
	upstream.Close()
	client.Close()
}

// closeWrite half-closes c where it can, so that the other side sees the
// end of what was sent while its own answer may still come.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// CloseWrite half-closes the connection underneath, where it can.
func (c *ownedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

var noDeadline time.Time

// enter counts a handler goroutine in p.wg, unless the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// hold registers an upstream connection, for Close to end; false when
// the proxy is closed.
func (p *Proxy) hold(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// dialContext is parent, also done when the proxy closes.
func (p *Proxy) dialContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(p.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// isRefused reports a connection refused by the other end.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
