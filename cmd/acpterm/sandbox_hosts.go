package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// applyHosts reads --allow-host: the list limits the commands' network
// to those hosts, through the proxy (--network proxy), so it cannot go
// with --network deny; --network allow, the default, gives way to it.
func (f *sandboxFlags) applyHosts(cfg *client.Config) error {
	if len(f.allowHosts) == 0 {
		return nil
	}
	if cfg.Network == sandbox.DenyNetwork {
		return errors.New("--allow-host lets the listed hosts through: it cannot go with --network deny")
	}
	if err := sandbox.CheckAllowHosts(f.allowHosts); err != nil {
		return fmt.Errorf("--allow-host: %v", strings.TrimPrefix(err.Error(), "sandbox: AllowHosts: "))
	}
	cfg.Network = sandbox.ProxyNetwork
	cfg.AllowHosts = append([]string(nil), f.allowHosts...)
	return nil
}

// serverPolicy is the commands' sandbox as the flags that exec-server
// and mcp share ask for it: --sandbox, --network, --writable-git,
// --writable-config, and whether --writable was given, which like
// --writable-git needs workspace-write.
func serverPolicy(mode, network string, gitRW, cfgRW, writable bool) (*sandbox.Policy, error) {
	sp := &sandbox.Policy{WritableGit: gitRW, WritableConfig: cfgRW, WithoutMountNamespace: true}
	var err error
	if sp.Mode, err = parseMode(mode); err != nil {
		return nil, err
	}
	if sp.Network, err = parseNetwork(network); err != nil {
		return nil, err
	}
	if (writable || gitRW) && sp.Mode != sandbox.WorkspaceWrite {
		return nil, fmt.Errorf("--writable and --writable-git need --sandbox workspace-write (not %s)", mode)
	}
	return sp, nil
}

// serverHosts is applyHosts for exec-server: the proxy runs on the
// target, and reports what it refuses on the server's stderr.
func serverHosts(sp *sandbox.Policy, hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	if sp.Network == sandbox.DenyNetwork {
		return errors.New("--allow-host lets the listed hosts through: it cannot go with --network deny")
	}
	if err := sandbox.CheckAllowHosts(hosts); err != nil {
		return fmt.Errorf("--allow-host: %v", strings.TrimPrefix(err.Error(), "sandbox: AllowHosts: "))
	}
	sp.Network = sandbox.ProxyNetwork
	sp.AllowHosts = append([]string(nil), hosts...)
	var mu sync.Mutex
	seen := map[string]bool{}
	sp.Proxy = &netproxy.Options{OnDeny: func(d netproxy.Denial) {
		mu.Lock()
		defer mu.Unlock()
		key := d.Host + ":" + strconv.Itoa(int(d.Port))
		if seen[key] || len(seen) >= 100 {
			return
		}
		seen[key] = true
		fmt.Fprintf(os.Stderr, "acpterm exec-server: network: refused a sandboxed connection to %s: %s\n", textsafe.Line(key), textsafe.Line(d.Reason))
	}}
	return nil
}

// agentHosts is the host list of the agent (agents.HostsFor).
func agentHosts(name string, command []string) ([]string, error) {
	reg, err := agents.Load("")
	if err != nil {
		return nil, err
	}
	return reg.HostsFor(name, command), nil
}
