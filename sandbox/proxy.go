package sandbox

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// ProxyAddr is where a ProxyNetwork command finds its proxy: on its own
// loopback, in its own network namespace, so the port is free whatever
// the host runs. The sandbox helper opens the listening socket there
// before the command starts and hands it to the host, whose proxy
// accepts on it; the command holds no descriptor of it, and cannot bind
// the address itself (EADDRINUSE).
const ProxyAddr = "127.0.0.1:3128"

const proxyPort = 3128

// noProxyLoopback is NO_PROXY: the command's own servers, on its own
// loopback, are reached directly. The host's loopback ports on the list
// are forwarded to the same addresses there (proxyForwards), so a client
// reaches them directly too.
const noProxyLoopback = "localhost,127.0.0.1,::1"

// maxForwards bounds the loopback addresses a list may forward.
const maxForwards = 16

// CheckAllowHosts reports what is wrong with a list for
// Policy.AllowHosts, as Wrap would: a pattern that is not one, a loopback
// address without a port, too many loopback addresses.
func CheckAllowHosts(hosts []string) error {
	_, err := (&Policy{AllowHosts: hosts}).proxyRules()
	return err
}

// proxyRules checks p.AllowHosts for a ProxyNetwork policy: the
// patterns, and that each loopback address comes with a port, which is
// forwarded into the command's namespace (a whole loopback cannot be:
// the command's own is there).
func (p *Policy) proxyRules() (*netproxy.Rules, error) {
	r, err := netproxy.ParseRules(p.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: AllowHosts: %w", err)
	}
	lo := r.Loopback()
	for _, ap := range lo {
		if ap.Port() == 0 {
			return nil, fmt.Errorf("sandbox: AllowHosts: loopback address %s needs a port: the host's loopback is reached port by port, forwarded to the same address in the sandbox, whose loopback is its own", ap.Addr())
		}
	}
	if len(lo) > maxForwards {
		return nil, fmt.Errorf("sandbox: AllowHosts: more than %d loopback addresses", maxForwards)
	}
	return r, nil
}

// proxyForwards are the loopback addresses of p's list, as the helper
// binds them in the command's namespace.
func (p *Policy) proxyForwards() []string {
	r, err := p.proxyRules()
	if err != nil {
		return nil
	}
	var out []string
	for _, ap := range r.Loopback() {
		out = append(out, ap.String())
	}
	return out
}

// proxyEnv points the usual proxy variables at addr, over what env had:
// a proxy of the user's is out of reach in the namespace anyway.
//
//	HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy   http://ADDR
//	ALL_PROXY, all_proxy                               socks5h://ADDR (names resolved by the proxy)
//	NO_PROXY, no_proxy                                 the command's own loopback (the listed host loopback ports are forwarded there)
//	npm_config_proxy, npm_config_https_proxy           http://ADDR
//	GIT_CONFIG_COUNT/KEY_n/VALUE_n                     http.proxy=http://ADDR, after the entries env had
//	NODE_USE_ENV_PROXY=1                               Node 24's fetch and http honour the variables
//
// With credentials (Cmd.ProxyClient) the URLs carry them: the proxy then
// knows which command connects.
func proxyEnv(env []string, addr string, cred netproxy.Credentials) []string {
	httpURL, socksURL := cred.URL("http", addr), cred.URL("socks5h", addr)
	noProxy := noProxyLoopback
	set := [][2]string{
		{"HTTP_PROXY", httpURL}, {"HTTPS_PROXY", httpURL}, {"http_proxy", httpURL}, {"https_proxy", httpURL},
		{"ALL_PROXY", socksURL}, {"all_proxy", socksURL},
		{"NO_PROXY", noProxy}, {"no_proxy", noProxy},
		{"npm_config_proxy", httpURL}, {"npm_config_https_proxy", httpURL},
		{"NODE_USE_ENV_PROXY", "1"},
	}
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if c, err := strconv.Atoi(v); err == nil && c >= 0 && c < 1000 {
				n = c
			}
		}
	}
	set = append(set, [2]string{"GIT_CONFIG_COUNT", strconv.Itoa(n + 1)},
		[2]string{"GIT_CONFIG_KEY_" + strconv.Itoa(n), "http.proxy"},
		[2]string{"GIT_CONFIG_VALUE_" + strconv.Itoa(n), httpURL})
	for _, kv := range set {
		env = append(withoutEnv(env, kv[0]), kv[0]+"="+kv[1])
	}
	return env
}

// proxySummary is Applied.String's part for the network.
func proxySummary(a *Applied) string {
	return fmt.Sprintf("network limited to %d host patterns through a proxy at %s (namespace)", len(a.AllowHosts), a.ProxyAddr)
}

// denyWhat is what a network setting cannot do without a namespace.
func denyWhat(n Network) string {
	if n == ProxyNetwork {
		return "limit the network to its allowed hosts (denied instead, as far as the fallback goes)"
	}
	return "deny the network"
}
