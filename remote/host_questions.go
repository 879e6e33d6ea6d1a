package remote

import (
	"context"
	"encoding/json"
	"net/netip"

	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
)

// askThroughClient makes the commands' proxy, when they have one with a
// list of hosts and nothing of the caller's to ask, put the hosts that
// are not on it to the client (MethodAskHost), if the client's hello
// says it answers; else they are refused at once, as before there was a
// client to ask. What the proxy refuses is reported to the client too
// (NotifyNetworkDenied), beside the caller's OnDeny. It changes copies
// only: the caller's policy is left as it was. It reports whether the
// server asks.
func (s *server) askThroughClient(topts *terminal.Options) bool {
	if topts.Policy == nil || topts.Policy.Sandbox == nil || topts.Policy.Sandbox.Network != sandbox.ProxyNetwork {
		return false
	}
	sp := *topts.Policy.Sandbox
	var proxy netproxy.Options
	if sp.Proxy != nil {
		proxy = *sp.Proxy
	}
	asks := proxy.Ask == nil
	if asks {
		proxy.Ask = &netproxy.Asker{Decide: s.askHost}
	}
	onDeny := proxy.OnDeny
	proxy.OnDeny = func(d netproxy.Denial) {
		if onDeny != nil {
			onDeny(d)
		}
		s.reportDenial(d)
	}
	sp.Proxy = &proxy
	policy := *topts.Policy
	policy.Sandbox = &sp
	topts.Policy = &policy
	return asks
}

// askHost puts one question about a host to the client, and waits for
// its answer as long as ctx (the Asker's bound) lets it.
func (s *server) askHost(ctx context.Context, q netproxy.Question) netproxy.Decision {
	if !s.askHosts.Load() {
		return netproxy.NotAsked
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return netproxy.Deny
	}
	var resp AskHostResponse
	req := &AskHostRequest{Protocol: q.Protocol, Host: q.Target.Host, Port: q.Target.Port, Client: q.Client}
	if q.Target.Addr.IsValid() {
		req.Host = q.Target.Addr.String()
	}
	if err := s.conn.Call(ctx, MethodAskHost, req, &resp); err != nil {
		return netproxy.Deny
	}
	switch resp.Decision {
	case DecisionAllowOnce:
		return netproxy.AllowOnce
	case DecisionAllowSession:
		return netproxy.AllowSession
	}
	return netproxy.Deny
}

// reportDenial sends a refusal to a client that takes them. It runs on
// the proxy's goroutines: the notification is queued, never waited for
// (a client that stops reading ends the connection, StallTimeout).
func (s *server) reportDenial(d netproxy.Denial) {
	if !s.denials.Load() {
		return
	}
	select {
	case <-s.ready:
	default:
		return
	}
	_ = s.conn.Notify(s.ctx, NotifyNetworkDenied, &d)
}

// questionOf is the client's reading of a question from the target: the
// host is taken as an address when it parses as one, as the target's
// proxy does.
func questionOf(req *AskHostRequest) netproxy.Question {
	t := netproxy.Target{Host: req.Host, Port: req.Port}
	if a, err := netip.ParseAddr(req.Host); err == nil {
		t.Addr = a.Unmap()
	}
	return netproxy.Question{Protocol: req.Protocol, Target: t, Client: req.Client}
}

// Bounds of a question from the target, past which the client refuses it
// without asking: a DNS name is at most 253 bytes, a protocol a word, and
// the command's name is clipped by the target's runtime.
const (
	maxAskHost     = 253
	maxAskProtocol = 16
	maxAskClient   = 8 << 10
)

// answerAskHost is the client's side of MethodAskHost: the question put
// to ClientOptions.AskHost, when it is set and the question is of sane
// size.
func (c *Client) answerAskHost(ctx context.Context, req *AskHostRequest) (*AskHostResponse, error) {
	resp := &AskHostResponse{Decision: DecisionDeny}
	if c.askHost == nil || req.Host == "" || len(req.Host) > maxAskHost || len(req.Protocol) > maxAskProtocol || len(req.Client) > maxAskClient {
		return resp, nil
	}
	// The target bounds its question, but a hostile one need not: the
	// wait is bounded here too, so it cannot hold a call open for ever.
	ctx, cancel := context.WithTimeout(ctx, netproxy.DefaultAskTimeout)
	defer cancel()
	switch c.askHost(ctx, questionOf(req)) {
	case netproxy.AllowOnce:
		resp.Decision = DecisionAllowOnce
	case netproxy.AllowSession:
		resp.Decision = DecisionAllowSession
	}
	return resp, nil
}

// Bounds of a denial from the target, past which its words are cut.
const maxDenialReason = 1024

// takeDenial is the client's side of NotifyNetworkDenied: the refusal,
// its words bounded, handed to ClientOptions.OnDeny.
func (c *Client) takeDenial(params []byte) {
	var d netproxy.Denial
	if c.onDeny == nil || json.Unmarshal(params, &d) != nil {
		return
	}
	if len(d.Host) > maxAskHost {
		d.Host = d.Host[:maxAskHost]
	}
	if len(d.Protocol) > maxAskProtocol {
		d.Protocol = d.Protocol[:maxAskProtocol]
	}
	if len(d.Reason) > maxDenialReason {
		d.Reason = d.Reason[:maxDenialReason]
	}
	c.onDeny(d)
}
