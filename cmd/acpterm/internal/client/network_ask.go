package client

import (
	"context"
	"fmt"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
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

// agentProxyClient names the agent's own connections in the questions:
// its proxy is its own (it runs in a sandbox of its own, with its own
// listener), so what connects there is the agent or a program it started
// itself, whatever credentials it sends.
const agentProxyClient = "\x00agent"

// hostAskTimeout bounds a question about a host: the connection waits
// that long at most.
const hostAskTimeout = netproxy.DefaultAskTimeout

// enableAsking lets the run's proxies ask the user about the hosts that
// are not on their list, when there is a terminal to ask on; called once
// the prompter is set up, before any proxy starts (each copies its
// options when it starts).
func (d *driver) enableAsking() {
	sp := d.sandbox
	if sp == nil || sp.Network != sandbox.ProxyNetwork || sp.Proxy == nil || d.ask == nil || d.cfg.Approval == ApprovalNone {
		return
	}
	sp.Proxy.Ask = &netproxy.Asker{Decide: d.decideHost, Timeout: hostAskTimeout}
}

// decideHost asks the user about one connection, through the prompter
// the permission questions use: y allows it once, a allows the host and
// port for the rest of the run, n (Ctrl-C, Ctrl-D, the end of input, a
// cancelled turn) refuses it.
func (d *driver) decideHost(ctx context.Context, q netproxy.Question) netproxy.Decision {
	switch d.ask.ask(ctx, d.perm.done(), hostQuestion(q)) {
	case answerYes:
		return netproxy.AllowOnce
	case answerAlways:
		return netproxy.AllowSession
	}
	return netproxy.Deny
}

// hostQuestion is the question about q: the host and port, and who
// connects as acpterm knows it (never the agent's title for the call).
// The host was parsed by the proxy (a DNS name of letters, digits, '-',
// '_' and dots, at most 253 bytes, or an address); it is escaped all the
// same, as is the command line, clipped to fit on a screen.
func hostQuestion(q netproxy.Question) string {
	host := textsafe.Line(render.Clip(q.Target.String(), 300))
	return fmt.Sprintf("acpterm: network: %s wants to connect to %s, which is not on the allow-list\n"+
		"  allow? [y]es, this connection once; [a]lways, %s for the rest of this run; [n]o: ",
		hostClient(q.Client), host, host)
}

// hostClient names who connects, for hostQuestion.
func hostClient(client string) string {
	if client == agentProxyClient {
		return "the agent itself (or a program it started)"
	}
	id, line, ok := terminal.SplitProxyClient(client)
	if !ok {
		return "a command of this run that did not name itself (it sent no proxy credentials of acpterm's)"
	}
	return fmt.Sprintf("the command %s (terminal %s)", fitCommand(textsafe.Line(line)), textsafe.Line(string(id)))
}

// allowHostHint is how to let a refused host through next time.
func allowHostHint(dn netproxy.Denial) string {
	h := render.AllowHostHint(dn)
	if h == "" {
		return "--allow-host HOST lets a host through"
	}
	return textsafe.Line(render.Clip(h, 300)) + " lets it through"
}
