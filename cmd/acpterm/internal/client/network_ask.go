package client

import (
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// Asking about hosts: under a list (--allow-host, --network proxy, or a
// confined agent limited to its hosts by default) a connection to a host
// that is not on it is put to the user when there is a terminal to ask
// on, instead of refused: allow this connection once, allow the host and
// port for the rest of the run (the agent's proxy and its commands'
// share the answer, so the commands never reach more than the agent), or
// refuse. Without a terminal (a -p run in a pipe) nothing asks: the
// connection is refused at once, and reported as network_denied.
//
// --approve-all does not answer these questions (it is about the agent's
// requests, not the network); --deny-all refuses them without asking.
// The questions themselves are permission.Approver.DecideHost's.

// hostAskTimeout bounds a question about a host: the connection waits
// that long at most.
const hostAskTimeout = netproxy.DefaultAskTimeout

// enableAsking lets the run's proxies ask the user about the hosts that
// are not on their list, when there is a terminal to ask on; called once
// the prompter is set up, before any proxy starts (each copies its
// options when it starts).
func (d *driver) enableAsking() {
	sp := d.sandbox
	if sp == nil || sp.Network != sandbox.ProxyNetwork || sp.Proxy == nil || !asksHosts(&d.cfg) {
		return
	}
	sp.Proxy.Ask = &netproxy.Asker{Decide: d.perm.DecideHost, Timeout: hostAskTimeout}
}

// asksHosts reports whether a run asks the user about hosts that are not
// on its list, here or on the --remote target: when it has a terminal to
// ask on (where startRendering makes the prompter) and --deny-all does not
// refuse them all.
func asksHosts(c *Config) bool {
	return c.TTYIn != nil && c.TTYOut != nil && c.Approval != permission.ApprovalNone
}
