package netproxy

import (
	"net"
	"net/netip"
)

// Forward accepts connections on l and connects each to to, an address
// the rules must allow (else each is refused, and reported as a Denial
// of protocol "forward"): a port forward, for clients that connect
// directly rather than through a proxy. A sandbox with a loopback of its
// own uses it for the loopback addresses on its list, so that its
// programs reach the host's port at the address they were given, while
// their own servers on the other ports stay theirs. It shares Serve's
// bounds and ends, with l, at Close.
func (p *Proxy) Forward(l net.Listener, to netip.AddrPort) error {
	if !p.register(l) {
		return ErrClosed
	}
	t := Target{Host: to.Addr().Unmap().String(), Addr: to.Addr().Unmap(), Port: to.Port()}
	return p.accept(l, func(c net.Conn) { p.forwardConn(c, t) })
}

func (p *Proxy) forwardConn(c net.Conn, t Target) {
	defer p.release(c)
	if why := p.denyReason(t); why != "" {
		p.deny("forward", t, why)
		return
	}
	ctx, cancel := p.dialContext(p.ctx)
	up, err := p.dial(ctx, t)
	cancel()
	if err != nil {
		return
	}
	if !p.hold(up) {
		up.Close()
		return
	}
	defer p.drop(up)
	splice(c, c, up)
}
