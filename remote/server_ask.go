package remote

import (
	"context"
	"net/netip"

	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
)

// askThroughClient makes the commands' proxy, when they have one with a
// list of hosts and nothing of the caller's to ask, put the hosts that
// are not on it to the client (MethodAskHost), if the client's hello
// says it answers; else they are refused at once, as before there was a
// client to ask. It changes copies only: the caller's policy is left as
// it was. It reports whether the server asks.
func (s *server) askThroughClient(topts *terminal.Options) bool {
	if topts.Policy == nil || topts.Policy.Sandbox == nil {
		return false
	}
	sp := *topts.Policy.Sandbox
	if sp.Network != sandbox.ProxyNetwork || sp.Proxy != nil && sp.Proxy.Ask != nil {
		return false
	}
	var proxy netproxy.Options
	if sp.Proxy != nil {
		proxy = *sp.Proxy
	}
	proxy.Ask = &netproxy.Asker{Decide: s.askHost}
	sp.Proxy = &proxy
	policy := *topts.Policy
	policy.Sandbox = &sp
	topts.Policy = &policy
	return true
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
	switch c.askHost(ctx, questionOf(req)) {
	case netproxy.AllowOnce:
		resp.Decision = DecisionAllowOnce
	case netproxy.AllowSession:
		resp.Decision = DecisionAllowSession
	}
	return resp, nil
}
