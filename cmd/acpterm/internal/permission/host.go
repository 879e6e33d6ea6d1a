package permission

import (
	"context"
	"fmt"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
)

// AgentProxyClient names the agent's own connections in the questions
// about hosts: its proxy is its own (it runs in a sandbox of its own, with
// its own listener), so what connects there is the agent or a program it
// started itself, whatever credentials it sends. The client gives it to
// the agent's proxy as the proxy's client.
const AgentProxyClient = "\x00agent"

// DecideHost asks the user about one connection to a host that is not on
// the run's list, through the prompter the permission questions use: y
// allows it once, a allows the host and port for the rest of the run, n
// (Ctrl-C, Ctrl-D, the end of input, a cancelled turn) refuses it.
// --approve-all does not answer these questions, as it is about the
// agent's requests, not the network; under --deny-all, or without a
// prompter, the client asks nothing and the connection is refused at once.
func (a *Approver) DecideHost(ctx context.Context, q netproxy.Question) netproxy.Decision {
	if a.prompt == nil {
		return netproxy.Deny
	}
	switch a.prompt.ask(ctx, a.Done(), hostQuestion(q)) {
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
	if client == AgentProxyClient {
		return "the agent itself (or a program it started)"
	}
	id, line, ok := terminal.SplitProxyClient(client)
	if !ok {
		return "a command of this run that did not name itself (it sent no proxy credentials of acpterm's)"
	}
	return fmt.Sprintf("the command %s (terminal %s)", fitCommand(textsafe.Line(line)), textsafe.Line(string(id)))
}

// AllowHostHint is how to let a refused host through next time, for the
// message that reports the refusal.
func AllowHostHint(dn netproxy.Denial) string {
	h := render.AllowHostHint(dn)
	if h == "" {
		return "--allow-host HOST lets a host through"
	}
	return textsafe.Line(render.Clip(h, 300)) + " lets it through"
}
