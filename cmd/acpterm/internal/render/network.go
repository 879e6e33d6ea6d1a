package render

import (
	"net/netip"
	"time"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// NetworkRenderer is implemented by renderers that report the
// connections the sandbox's proxy refused (--allow-host) as events of
// their own: the JSON one. Others leave the report to the caller (a line
// on stderr).
type NetworkRenderer interface {
	NetworkDenied(d netproxy.Denial)
}

// jsonNetworkDenied is a connection refused by the proxy: what a client
// or a person needs to see why a command failed, and what --allow-host
// would let through.
type jsonNetworkDenied struct {
	Event    string `json:"event"` // network_denied
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Protocol string `json:"protocol"` // http, connect, socks5, forward
	Reason   string `json:"reason"`
	Hint     string `json:"hint,omitempty"` // the flag that lets the host through
	Time     string `json:"time"`           // RFC 3339, UTC
}

func (r *jsonRenderer) NetworkDenied(d netproxy.Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(jsonNetworkDenied{Event: "network_denied", Host: d.Host, Port: d.Port, Protocol: d.Protocol,
		Reason: d.Reason, Hint: AllowHostHint(d), Time: d.Time.UTC().Format(time.RFC3339Nano)})
}

// AllowHostHint is the --allow-host flag that lets a refused connection
// through: the name (any port), or an address with its port (a loopback
// address needs one); "" when the request named no readable host.
func AllowHostHint(d netproxy.Denial) string {
	if d.Host == "" {
		return ""
	}
	if a, err := netip.ParseAddr(d.Host); err == nil {
		return "--allow-host " + netip.AddrPortFrom(a, d.Port).String()
	}
	return "--allow-host " + d.Host
}
