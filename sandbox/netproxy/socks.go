package netproxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
)

// SOCKS5 (RFC 1928), the CONNECT command only, without authentication.

const socksVersion = 5

// Reply codes.
const (
	socksOK             = 0x00
	socksNotAllowed     = 0x02 // connection not allowed by ruleset
	socksHostUnreach    = 0x04
	socksRefused        = 0x05
	socksCmdUnsupported = 0x07
	socksAddrUnsupport  = 0x08
)

// socksError is a request that gets a reply code rather than a tunnel.
type socksError struct {
	code byte
	msg  string
}

func (e *socksError) Error() string { return e.msg }

// readSOCKS reads the greeting, answers it, and reads the request. A nil
// Target with a nil error never happens; a *socksError says which reply
// to send, any other error means the client is gone or speaks nonsense
// (the connection is closed without a reply). who is the client the
// user name and password name (RFC 1929), when it offered them; a
// client may offer no authentication instead, and is served the same.
func (p *Proxy) readSOCKS(r *bufio.Reader, w io.Writer) (t Target, who string, err error) {
	who = p.opt.Client
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Target{}, who, err
	}
	if hdr[0] != socksVersion {
		return Target{}, who, errors.New("not SOCKS5")
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return Target{}, who, err
	}
	method := byte(0xff)
	for _, m := range methods {
		if m == socksUserPass || m == socksNoAuth && method == 0xff {
			method = m
		}
	}
	if method == 0xff {
		_, _ = w.Write([]byte{socksVersion, 0xff})
		return Target{}, who, errors.New("the client offers neither no authentication nor a user name and password")
	}
	if _, err := w.Write([]byte{socksVersion, method}); err != nil {
		return Target{}, who, err
	}
	if method == socksUserPass {
		if who, err = p.readSOCKSAuth(r, w); err != nil {
			return Target{}, who, err
		}
	}
	t, err = readSOCKSRequest(r)
	return t, who, err
}

// Authentication methods.
const (
	socksNoAuth   = 0x00
	socksUserPass = 0x02
)

// readSOCKSAuth reads RFC 1929's user name and password and accepts
// them, whatever they are: they name the client, they do not admit it.
func (p *Proxy) readSOCKSAuth(r *bufio.Reader, w io.Writer) (string, error) {
	ver, err := r.ReadByte()
	if err != nil {
		return "", err
	}
	if ver != 0x01 {
		return "", errors.New("bad user name and password version")
	}
	user, err := readShortString(r)
	if err != nil {
		return "", err
	}
	pass, err := readShortString(r)
	if err != nil {
		return "", err
	}
	if _, err := w.Write([]byte{0x01, 0x00}); err != nil {
		return "", err
	}
	return p.clientOf(user, pass), nil
}

// readShortString reads a length byte and that many bytes.
func readShortString(r *bufio.Reader) (string, error) {
	n, err := r.ReadByte()
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// readSOCKSRequest reads the CONNECT request that follows the greeting.
func readSOCKSRequest(r *bufio.Reader) (Target, error) {
	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(r, req[:]); err != nil {
		return Target{}, err
	}
	if req[0] != socksVersion {
		return Target{}, errors.New("bad request version")
	}
	host, err := readSOCKSAddr(r, req[3])
	if err != nil {
		return Target{}, err
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return Target{}, err
	}
	port := binary.BigEndian.Uint16(pb[:])
	if req[1] != 0x01 {
		return Target{Host: host, Port: port}, &socksError{socksCmdUnsupported, "only CONNECT is supported (no BIND, no UDP ASSOCIATE)"}
	}
	t, err := ParseTarget(host, port)
	if err != nil {
		return Target{Host: trimForReport(host), Port: port}, &socksError{socksNotAllowed, err.Error()}
	}
	return t, nil
}

// readSOCKSAddr reads DST.ADDR of type atyp, as text.
func readSOCKSAddr(r *bufio.Reader, atyp byte) (string, error) {
	switch atyp {
	case 0x01:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case 0x04:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).String(), nil
	case 0x03:
		return readShortString(r)
	}
	return "", &socksError{socksAddrUnsupport, "unknown address type"}
}

// socksReply writes a reply with an empty bound address.
func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{socksVersion, code, 0, 0x01, 0, 0, 0, 0, 0, 0})
	return err
}

// serveSOCKS serves one SOCKS5 connection.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	t, who, err := p.readSOCKS(br, c)
	var se *socksError
	switch {
	case errors.As(err, &se):
		if se.code == socksNotAllowed || se.code == socksCmdUnsupported {
			p.deny("socks5", t, se.msg)
		}
		_ = socksReply(c, se.code)
		return
	case err != nil:
		return
	}
	_ = c.SetDeadline(noDeadline) // asking may take longer than a handshake (Asker.Timeout bounds it)
	if why := p.permit(p.ctx, "socks5", t, who); why != "" {
		p.deny("socks5", t, why)
		_ = socksReply(c, socksNotAllowed)
		return
	}
	ctx, cancel := p.dialContext(p.ctx)
	up, err := p.dial(ctx, t)
	cancel()
	if err != nil {
		code := byte(socksHostUnreach)
		switch {
		case errors.Is(err, errPrivate):
			p.deny("socks5", t, t.Host+" "+errPrivate.Error())
			code = socksNotAllowed
		case isRefused(err):
			code = socksRefused
		}
		_ = socksReply(c, code)
		return
	}
	if !p.hold(up) {
		up.Close()
		return
	}
	defer p.drop(up)
	if socksReply(c, socksOK) != nil {
		return
	}
	_ = c.SetDeadline(noDeadline)
	splice(c, br, up)
}
