package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadPattern is wrapped by the errors of ParseRules for an entry that
// is not a host pattern.
var ErrBadPattern = errors.New("netproxy: bad host pattern")

// Rules is a parsed allow-list of host patterns. The zero value allows
// nothing.
type Rules struct {
	entries []rule
	src     []string
}

// rule is one entry: a name (exact or, with wild, its subdomains only) or
// an address, and a port (0: any).
type rule struct {
	name string     // lower case, no trailing dot; "" for an address
	wild bool       // *.name: a subdomain of name, not name itself
	addr netip.Addr // valid for an address entry
	port uint16
}

// maxName is the longest DNS name (RFC 1035), without the trailing dot.
const maxName = 253

// ParseRules parses host patterns:
//
//	api.example.com         that name, any port
//	api.example.com:443     that name, port 443 only
//	*.example.com           any subdomain of example.com (not example.com itself)
//	*.example.com:8443      the same, port 8443 only
//	203.0.113.7, 127.0.0.1:8080, ::1, [2001:db8::1]:443
//	                        that address (a name never matches it)
//
// Names are matched without regard to case and to a trailing dot. A
// bare "*" (everything) is refused: that is no allow-list.
func ParseRules(patterns []string) (*Rules, error) {
	r := &Rules{src: append([]string(nil), patterns...)}
	for _, p := range patterns {
		e, err := parseRule(p)
		if err != nil {
			return nil, err
		}
		r.entries = append(r.entries, e)
	}
	return r, nil
}

func parseRule(p string) (rule, error) {
	bad := func(why string) (rule, error) {
		return rule{}, fmt.Errorf("%w %q: %s", ErrBadPattern, p, why)
	}
	s := strings.TrimSpace(p)
	if s == "" {
		return bad("empty")
	}
	// A bare IPv6 address has colons but no port.
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return bad("an address with a zone")
		}
		return rule{addr: a.Unmap()}, nil
	}
	host, port, err := splitHostPort(s)
	if err != nil {
		return bad(err.Error())
	}
	var e rule
	e.port = port
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return bad("an address with a zone")
		}
		e.addr = a.Unmap()
		return e, nil
	}
	if strings.HasPrefix(s, "[") {
		return bad("brackets hold an IPv6 address")
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.wild, host = true, rest
	}
	if host == "*" || host == "" {
		return bad("matches every host: use the network allowed instead of a list")
	}
	name, err := normalName(host)
	if err != nil {
		return bad(err.Error())
	}
	if e.wild && !strings.Contains(name, ".") {
		return bad("a wildcard over a top-level domain")
	}
	e.name = name
	return e, nil
}

// splitHostPort splits "host", "host:port" or "[v6]:port".
func splitHostPort(s string) (string, uint16, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("missing ]")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		ps, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return "", 0, errors.New("junk after ]")
		}
		port, err := parsePort(ps)
		return host, port, err
	}
	host, ps, ok := strings.Cut(s, ":")
	if !ok {
		return s, 0, nil
	}
	if strings.Contains(ps, ":") {
		return "", 0, errors.New("more than one colon (an IPv6 address with a port goes in brackets)")
	}
	port, err := parsePort(ps)
	return host, port, err
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '+' {
		return 0, fmt.Errorf("port %q is not 1-65535", s)
	}
	return uint16(n), nil
}

// normalName lower-cases a DNS name, drops one trailing dot and checks
// its characters: letters, digits, '-' and '_' (service labels), labels
// of 1 to 63 bytes. Internationalized names must be given in their ASCII
// (punycode) form.
func normalName(h string) (string, error) {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", errors.New("empty name")
	}
	if len(h) > maxName {
		return "", fmt.Errorf("name longer than %d bytes", maxName)
	}
	h = strings.ToLower(h)
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("a label is empty or longer than 63 bytes")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("character %q in a name (internationalized names go in punycode)", c)
			}
		}
	}
	return h, nil
}

// Target is a destination a command asked for: a name or an address
// literal, and a port.
type Target struct {
	Host string     // the name, normalized; or the address as text
	Addr netip.Addr // valid when the command gave an address
	Port uint16
}

func (t Target) String() string {
	if t.Addr.IsValid() {
		return netip.AddrPortFrom(t.Addr, t.Port).String()
	}
	return t.Host + ":" + strconv.Itoa(int(t.Port))
}

// ParseTarget reads a host and port as a command sends them (a CONNECT
// authority, a URL's host, a SOCKS domain name): an address literal, or
// a DNS name that normalName accepts.
func ParseTarget(host string, port uint16) (Target, error) {
	if port == 0 {
		return Target{}, errors.New("port 0")
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return Target{}, errors.New("an address with a zone")
		}
		a = a.Unmap()
		return Target{Host: a.String(), Addr: a, Port: port}, nil
	}
	if h != host {
		return Target{}, fmt.Errorf("%q in brackets is not an IPv6 address", host)
	}
	name, err := normalName(host)
	if err != nil {
		return Target{}, fmt.Errorf("host %q: %w", host, err)
	}
	return Target{Host: name, Port: port}, nil
}

// Allows reports whether t is on the list. An address target matches
// only address entries; a name target only name entries.
func (r *Rules) Allows(t Target) bool {
	if r == nil {
		return false
	}
	for _, e := range r.entries {
		if e.port != 0 && e.port != t.Port {
			continue
		}
		switch {
		case e.addr.IsValid():
			if t.Addr.IsValid() && t.Addr == e.addr {
				return true
			}
		case t.Addr.IsValid():
		case e.wild:
			if strings.HasSuffix(t.Host, "."+e.name) {
				return true
			}
		case t.Host == e.name:
			return true
		}
	}
	return false
}

// Patterns returns the list as given.
func (r *Rules) Patterns() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.src...)
}

// String is the list as given, comma-separated, for messages.
func (r *Rules) String() string {
	if r == nil || len(r.src) == 0 {
		return "(empty)"
	}
	return strings.Join(r.src, ", ")
}

// Loopback returns the entries that name a loopback address, with their
// ports (0 for an entry without one): a sandbox with a loopback of its
// own forwards each such port of it to the host's (see Proxy.Forward).
func (r *Rules) Loopback() []netip.AddrPort {
	if r == nil {
		return nil
	}
	var out []netip.AddrPort
	for _, e := range r.entries {
		if e.addr.IsValid() && e.addr.IsLoopback() {
			out = append(out, netip.AddrPortFrom(e.addr, e.port))
		}
	}
	return out
}
