package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/acpterm/acpterm/sandbox/netproxy"
	"golang.org/x/sys/unix"
)

// A ProxyNetwork sandbox's way out. The helper, once in the new network
// namespace with its loopback up, opens a TCP listening socket on
// ProxyAddr there and sends it to the host over a socketpair made for
// this alone (SCM_RIGHTS), then closes its own copy and the socketpair
// before anything of the command's runs. The host's proxy accepts on it:
// a socket belongs to the namespace it was made in, whoever holds it, so
// connections come from inside and the proxy's own go out from the
// host's namespace.

// proxyRun is the host's side: the proxy, and the goroutines that wait
// for the listeners and then serve them.
type proxyRun struct {
	px       *netproxy.Proxy
	forwards []netip.AddrPort // the listed loopback ports, in the plan's order
	mine     *net.UnixConn    // receives the listeners
	theirs   *os.File         // the helper's end, until the helper has it
	done     chan struct{}    // the goroutines returned
	once     sync.Once
	// started: start ran, so stop must join its goroutines. Set before
	// the run is shared (Wrap returns it, NewSpawner its spawner).
	started bool
}

// newProxyRun makes the proxy and the socketpair; start begins serving.
// theirs goes to the helper (as ExtraFiles), at the descriptor the plan
// names.
func newProxyRun(p *Policy) (*proxyRun, error) {
	var opts netproxy.Options
	if p.Proxy != nil {
		opts = *p.Proxy
	}
	if p.ProxyClient != "" {
		opts.Client = p.ProxyClient
	}
	px, err := netproxy.New(p.AllowHosts, &opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: AllowHosts: %w", err)
	}
	var forwards []netip.AddrPort
	for _, f := range p.proxyForwards() {
		forwards = append(forwards, netip.MustParseAddrPort(f))
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		px.Close()
		return nil, fmt.Errorf("sandbox: socketpair for the proxy: %w", err)
	}
	mf := os.NewFile(uintptr(fds[0]), "proxy-listener")
	c, err := net.FileConn(mf)
	mf.Close()
	if err != nil {
		unix.Close(fds[1])
		px.Close()
		return nil, fmt.Errorf("sandbox: proxy socket: %w", err)
	}
	return &proxyRun{px: px, forwards: forwards, mine: c.(*net.UnixConn),
		theirs: os.NewFile(uintptr(fds[1]), "proxy-listener-helper"), done: make(chan struct{})}, nil
}

// start waits, in a goroutine that stop joins, for the helper's
// listeners and serves them: the proxy's, and a port forward for each
// listed loopback port. The host's copy of the helper's end stays open
// until stop (or closeTheirs, once the helper has started): exec.Cmd
// reads it until Start returns, which only its caller knows.
func (r *proxyRun) start() {
	r.started = true
	go func() {
		defer close(r.done)
		ls, err := receiveListeners(r.mine, 1+len(r.forwards))
		if err != nil {
			return
		}
		var wg sync.WaitGroup
		for i, to := range r.forwards {
			wg.Go(func() { _ = r.px.Forward(ls[i+1], to) })
		}
		_ = r.px.Serve(ls[0])
		wg.Wait()
	}()
}

// stop closes the proxy, with every connection it carries, and joins
// the goroutines. It is idempotent and safe on nil.
func (r *proxyRun) stop() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.mine.Close() // a helper that never sent ends the wait
		r.px.Close()
		if r.started {
			<-r.done
		}
		r.closeTheirs()
	})
}

// closeTheirs closes the host's copy of the helper's end, once the
// helper has its own: a helper that dies before sending then ends the
// wait with EOF.
func (r *proxyRun) closeTheirs() { _ = r.theirs.Close() }

// addProxy arranges the listeners of a ProxyNetwork policy, in a new
// network namespace; Wrap and NewSpawner make the proxyRun and name the
// descriptor (plan.ProxyFD).
func (pr *prepared) addProxy(p *Policy) {
	if p.Network != ProxyNetwork {
		return
	}
	pr.pl.ProxyPort = proxyPort
	pr.pl.Forwards = p.proxyForwards()
	pr.applied.ProxyAddr = ProxyAddr
	pr.applied.AllowHosts = append([]string{}, p.AllowHosts...)
}

// receiveListeners reads the n descriptors the helper sends in one
// message, and checks each is a listening TCP socket before serving it.
func receiveListeners(c *net.UnixConn, n int) ([]net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*(maxForwards+1)))
	_, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != n || flags&unix.MSG_CTRUNC != 0 {
		closeAll(fds)
		return nil, fmt.Errorf("sandbox: the helper sent %d listeners, not %d", len(fds), n)
	}
	for _, fd := range fds {
		acc, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
		dom, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err1 != nil || err2 != nil || acc != 1 || dom != unix.AF_INET && dom != unix.AF_INET6 {
			closeAll(fds)
			return nil, errors.New("sandbox: the helper sent something other than TCP listeners")
		}
	}
	ls := make([]net.Listener, 0, n)
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// openProxyListener is the helper's side: a listener on ProxyAddr in
// this (new) network namespace and one on each of pl.Forwards, sent
// together on pl.ProxyFD; all are closed here before the command can
// run.
func openProxyListener(pl *plan) error {
	defer unix.Close(pl.ProxyFD)
	var fds []int
	defer func() { closeAll(fds) }()
	addrs := append([]string{ProxyAddr}, pl.Forwards...)
	for _, a := range addrs {
		fd, err := listenTCP(a)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	return unix.Sendmsg(pl.ProxyFD, []byte{0}, unix.UnixRights(fds...), nil, 0)
}

// listenTCP opens a listening socket on the loopback address addr.
func listenTCP(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, err
	}
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %s: %w", addr, err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen %s: %w", addr, err)
	}
	return fd, nil
}
