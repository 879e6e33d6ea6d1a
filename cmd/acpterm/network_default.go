package main

import (
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/sandbox"
)

// setString is a string flag that knows whether it was given: --network
// left out lets a confined agent's own list decide (defaultNetwork).
type setString struct {
	p   *string
	set *bool
}

func (s setString) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

func (s setString) Set(v string) error {
	*s.p, *s.set = v, true
	return nil
}

// defaultNetwork limits a confined agent to its hosts when neither
// --network nor --allow-host said otherwise: an agent with a list (its
// profile's API hosts, or its agents.json entry's allowHosts) that runs
// confined here gets the network of --network proxy, its own hosts on
// top of the run's list (empty: its commands reach only what is allowed
// when asked, the same or narrower). --network allow restores the
// network as the host has it. Not with --remote: the commands' network
// is the target's.
func (f *sandboxFlags) defaultNetwork(cfg *client.Config) error {
	if f.networkSet || len(f.allowHosts) > 0 || !cfg.SandboxAgent || cfg.Remote != nil || cfg.Network != sandbox.AllowNetwork {
		return nil
	}
	hosts, err := agentHosts(cfg.AgentName, cfg.Agent)
	if err != nil || hosts == nil {
		return err
	}
	cfg.Network = sandbox.ProxyNetwork
	cfg.AgentHosts = hosts
	cfg.NetworkByDefault = true
	return nil
}
