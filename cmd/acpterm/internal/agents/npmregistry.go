package agents

import (
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/sandbox"
)

// npmRegistries are the hosts npx fetches an agent's package from: npm's
// own registry, and the registries the user configured instead
// (npm_config_registry, or registry= and @scope:registry= lines of
// ~/.npmrc), as allow-list patterns: a name (any port), or a loopback
// address with its port (a registry on this machine, forwarded into the
// sandbox). What is not a usable pattern is left out. getenv and home
// are the environment's (os.Getenv, the home directory).
func npmRegistries(getenv func(string) string, home string) []string {
	hosts := []string{npmRegistry}
	add := func(raw string) {
		if len(hosts) > maxRegistries {
			return
		}
		if h := registryHost(raw); h != "" && !slices.Contains(hosts, h) && sandbox.CheckAllowHosts([]string{h}) == nil {
			hosts = append(hosts, h)
		}
	}
	for _, name := range []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		add(getenv(name))
	}
	if home != "" {
		for _, r := range npmrcRegistries(filepath.Join(home, ".npmrc")) {
			add(r)
		}
	}
	return hosts
}

// maxRegistries bounds the registries the user configured that a list
// takes (a loopback one takes one of the sandbox's few forwarded ports).
const maxRegistries = 8

// maxNpmrc bounds what is read of ~/.npmrc.
const maxNpmrc = 64 << 10

// npmrcRegistries are the registry URLs of an .npmrc: its registry= and
// @scope:registry= lines.
func npmrcRegistries(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxNpmrc))
	return parseNpmrcRegistries(string(b))
}

func parseNpmrcRegistries(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		if key == "registry" || strings.HasPrefix(key, "@") && strings.HasSuffix(key, ":registry") {
			out = append(out, strings.Trim(strings.TrimSpace(value), `"'`))
		}
	}
	return out
}

// registryHost is the allow-list pattern of a registry URL: its host
// name, or for an address its address and port; "" for what is not an
// http(s) URL with a host.
func registryHost(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return ""
	}
	host := u.Hostname()
	a, err := netip.ParseAddr(host)
	if err != nil {
		return strings.ToLower(host)
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(a.String(), port)
}
