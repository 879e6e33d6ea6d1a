package client

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// maxDenialReports bounds the refused connections a run reports: each
// host and port once, and no more than this many of them, so that a
// command retrying in a loop cannot flood the output.
const maxDenialReports = 100

// denials remembers which refusals were reported.
type denials struct {
	mu   sync.Mutex
	seen map[string]bool
	cut  bool
}

// proxyPolicy gives a ProxyNetwork policy the run's host list and a
// proxy that reports what it refuses.
func (d *driver) proxyPolicy(sp *sandbox.Policy) {
	if sp.Network != sandbox.ProxyNetwork {
		return
	}
	sp.AllowHosts = slices.Clone(d.cfg.AllowHosts)
	sp.Proxy = &netproxy.Options{OnDeny: d.networkDenied}
}

// networkDenied reports one refused connection: a network_denied event
// in JSON, a line on stderr otherwise. It runs on the proxy's goroutines.
func (d *driver) networkDenied(dn netproxy.Denial) {
	key := net.JoinHostPort(dn.Host, strconv.Itoa(int(dn.Port)))
	d.denied.mu.Lock()
	if d.denied.seen == nil {
		d.denied.seen = map[string]bool{}
	}
	report, last := !d.denied.seen[key] && !d.denied.cut, false
	if report {
		d.denied.seen[key] = true
		last = len(d.denied.seen) >= maxDenialReports
		d.denied.cut = last
	}
	d.denied.mu.Unlock()
	if !report {
		return
	}
	if d.sw != nil && d.sw.networkDenied(dn) {
		return
	}
	line := fmt.Sprintf("acpterm: network: refused a sandboxed connection to %s: %s (%s)",
		textsafe.Line(key), textsafe.Line(dn.Reason), permission.AllowHostHint(dn))
	if last {
		line += fmt.Sprintf("; no more refusals are reported after %d hosts", maxDenialReports)
	}
	d.writeStderr(render.Style{On: d.stderrColor()}.Dim(line))
}

// networkDenied passes a refusal to the current renderer when it
// reports them itself.
func (s *switchRenderer) networkDenied(dn netproxy.Denial) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	nr, ok := s.cur.(render.NetworkRenderer)
	if ok {
		nr.NetworkDenied(dn)
	}
	return ok
}

// hostList names the patterns of a list for the confinement line: the
// user's own words, a few of them.
func hostList(hosts []string) string {
	if len(hosts) == 0 {
		return "no host"
	}
	n := len(hosts)
	s := strings.Join(hosts[:min(n, 4)], ", ")
	if n > 4 {
		s += fmt.Sprintf(" and %d more", n-4)
	}
	return textsafe.Line(s)
}

// agentBasePolicy is the run's sandbox as the base of a confined agent's:
// under a ProxyNetwork sandbox its list adds the agent's own API hosts
// (Config.AgentHosts), which its commands do not get.
func (d *driver) agentBasePolicy() *sandbox.Policy {
	sp := d.sandbox
	if sp == nil || sp.Network != sandbox.ProxyNetwork {
		return sp
	}
	p := *sp
	p.ProxyClient = permission.AgentProxyClient
	p.AllowHosts = slices.Clone(sp.AllowHosts)
	for _, h := range d.cfg.AgentHosts {
		if !slices.Contains(p.AllowHosts, h) {
			p.AllowHosts = append(p.AllowHosts, h)
		}
	}
	return &p
}

// agentHostsNote is what the confinement line adds for a confined
// agent's own hosts.
func (d *driver) agentHostsNote() string {
	note := ""
	if d.cfg.SandboxAgent && len(d.cfg.AgentHosts) > 0 {
		note = " (the agent also reaches " + hostList(d.cfg.AgentHosts) + ")"
	}
	if d.cfg.NetworkByDefault {
		note += ", by default for a confined agent with a hosts list (--network allow lifts it)"
	}
	if d.sandbox != nil && d.sandbox.Proxy != nil && d.sandbox.Proxy.Ask != nil {
		note += "; other hosts are asked about"
	}
	return note
}
