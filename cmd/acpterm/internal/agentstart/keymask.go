package agentstart

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// sentinelPrefix starts every sentinel: plainly a placeholder to whoever
// reads it (an error message, a log).
const sentinelPrefix = "acpterm-masked-"

// KeyMask is a confined agent's masked API keys (Start.MaskKeys):
// the agent's environment holds a sentinel in each key's place and its
// base-URL variable leads to a netproxy.Masker that acpterm serves
// outside the sandbox, on a loopback port of the host; under
// --network proxy that port is forwarded into the agent's namespace
// (the helper's listener, handed out over its socketpair, as the proxy's
// own). The Masker sends each request to the one upstream (the base URL
// the user had set, else the agent's default API host) with the
// sentinels replaced by the keys in its headers. Keys it cannot mask are
// left as they were, and Keys says why.
type KeyMask struct {
	// Keys are the key variables set in the environment (and the agent's
	// login file, when it has one and no variable is set), each masked
	// or not, and why not.
	Keys []KeyStatus

	env    []string // VAR=VALUE to set in the agent's environment
	addr   string   // the Masker's loopback address, "" without one
	masker *netproxy.Masker
	done   chan struct{}
}

// KeyStatus is one key, masked or not.
type KeyStatus struct {
	Var      string `json:"var"` // the variable (or the login file's path)
	Masked   bool   `json:"masked"`
	Upstream string `json:"upstream,omitempty"` // where the key goes, when masked
	Why      string `json:"why,omitempty"`      // why not masked
}

// newKeyMask masks the keys of the agent started by command that getenv
// has: it makes the sentinels and, unless network is DenyNetwork (no
// request leaves then: the sentinels alone), starts the Masker. creds
// are the agent's login files. nil when the agent has no key variable
// set and no login file.
func newKeyMask(command []string, getenv func(string) string, network sandbox.Network, creds []string) (*KeyMask, error) {
	km := &KeyMask{}
	var secrets []netproxy.Secret
	var upstream *url.URL
	baseVar := ""
	keys := agents.KeysFor(command)
	var values []string // of the keys set: none may hold another
	for _, k := range keys {
		if v := getenv(k.Var); v != "" {
			values = append(values, v)
		}
	}
	for _, k := range keys {
		v := getenv(k.Var)
		if v == "" {
			continue
		}
		if k.NotMasked != "" {
			km.Keys = append(km.Keys, KeyStatus{Var: k.Var, Why: k.NotMasked})
			continue
		}
		u, why := upstreamOf(k, getenv)
		if why != "" {
			km.Keys = append(km.Keys, KeyStatus{Var: k.Var, Why: why})
			continue
		}
		if why := overlaps(v, values); why != "" {
			km.Keys = append(km.Keys, KeyStatus{Var: k.Var, Why: why})
			continue
		}
		if upstream != nil && (u.Scheme != upstream.Scheme || u.Host != upstream.Host || k.BaseURL != baseVar) {
			// One endpoint, one upstream: the first masked key's.
			km.Keys = append(km.Keys, KeyStatus{Var: k.Var, Why: "it goes to another host than " + baseVar + "'s"})
			continue
		}
		// Two variables holding one key share its sentinel.
		i := slices.IndexFunc(secrets, func(s netproxy.Secret) bool { return s.Value == v })
		if i < 0 {
			sentinel, err := newSentinel()
			if err != nil {
				return nil, err
			}
			secrets = append(secrets, netproxy.Secret{Sentinel: sentinel, Value: v})
			i = len(secrets) - 1
		}
		sentinel := secrets[i].Sentinel
		upstream, baseVar = u, k.BaseURL
		km.Keys = append(km.Keys, KeyStatus{Var: k.Var, Masked: true, Upstream: u.Scheme + "://" + u.Host})
		km.env = append(km.env, k.Var+"="+sentinel)
	}
	km.sameKey(secrets, getenv)
	if len(km.Keys) == 0 {
		for _, c := range creds {
			if _, err := os.Stat(c); err == nil {
				km.Keys = append(km.Keys, KeyStatus{Var: c, Why: "its login is a file, which the agent reads itself"})
			}
		}
	}
	if len(km.Keys) == 0 {
		return nil, nil
	}
	if len(secrets) == 0 || network == sandbox.DenyNetwork {
		return km, nil
	}
	if err := km.serve(upstream, secrets); err != nil {
		return nil, err
	}
	km.env = append(km.env, baseVar+"="+(&url.URL{Scheme: "http", Host: km.addr, Path: upstream.Path}).String())
	return km, nil
}

// sameKey gives a variable that is not masked, but holds a key that is
// (GOOGLE_API_KEY set to GEMINI_API_KEY's value), that key's sentinel:
// left as it was, it would hand the masked key over.
func (km *KeyMask) sameKey(secrets []netproxy.Secret, getenv func(string) string) {
	for i, k := range km.Keys {
		if k.Masked {
			continue
		}
		v := getenv(k.Var)
		j := slices.IndexFunc(secrets, func(s netproxy.Secret) bool { return s.Value == v })
		if j < 0 {
			continue
		}
		up := ""
		if m := slices.IndexFunc(km.Keys, func(o KeyStatus) bool { return o.Masked }); m >= 0 {
			up = km.Keys[m].Upstream
		}
		km.Keys[i] = KeyStatus{Var: k.Var, Masked: true, Upstream: up, Why: "holds a masked key: the same sentinel"}
		km.env = append(km.env, k.Var+"="+secrets[j].Sentinel)
	}
}

// overlaps says why a key cannot be told apart from the other keys to
// mask, values ("" when it can): one holds the other, or it holds a
// sentinel, or a character no header may hold (the variable is then no
// key to mask).
func overlaps(v string, values []string) string {
	if strings.Contains(v, sentinelPrefix) {
		return "its value holds a sentinel"
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return "its value holds a control character"
	}
	for _, o := range values {
		if o != v && (strings.Contains(o, v) || strings.Contains(v, o)) {
			return "its value and another key's contain one another"
		}
	}
	return ""
}

// upstreamOf is where key k goes: its base-URL variable's value, else
// the agent's default; why is set when that is not a URL the Masker can
// forward to.
func upstreamOf(k agents.APIKey, getenv func(string) string) (u *url.URL, why string) {
	raw := getenv(k.BaseURL)
	if raw == "" {
		raw = k.Default
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, k.BaseURL + " is not an http or https URL with a host (and no password)"
	}
	if strings.Contains(raw, sentinelPrefix) {
		return nil, k.BaseURL + " leads to a masking endpoint already"
	}
	return u, ""
}

// newSentinel is a per-run placeholder: the prefix and 128 random bits.
func newSentinel() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a sentinel: %w", err)
	}
	return sentinelPrefix + hex.EncodeToString(b), nil
}

// serve starts the Masker on a host loopback port.
func (km *KeyMask) serve(upstream *url.URL, secrets []netproxy.Secret) error {
	m, err := netproxy.NewMasker(netproxy.MaskOptions{Upstream: upstream, Secrets: secrets})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cannot listen for the key mask: %w", err)
	}
	km.masker, km.addr, km.done = m, l.Addr().String(), make(chan struct{})
	go func() {
		defer close(km.done)
		_ = m.Serve(l) // http.ErrServerClosed, at Close
	}()
	return nil
}

// allowHost is the Masker's address as an --allow-host entry, for an
// agent under ProxyNetwork ("" without a Masker): the sandbox forwards
// it into the agent's namespace.
func (km *KeyMask) allowHost() string {
	if km == nil {
		return ""
	}
	return km.addr
}

// apply sets the sentinels and the base URL in env, over what it had.
func (km *KeyMask) apply(env []string) []string {
	if km == nil {
		return env
	}
	for _, kv := range km.env {
		name, _, _ := strings.Cut(kv, "=")
		env = append(slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") }), kv)
	}
	return env
}

// Close stops the Masker, with every connection, and joins its
// goroutine. Safe on nil and more than once.
func (km *KeyMask) Close() {
	if km == nil || km.masker == nil {
		return
	}
	km.masker.Close()
	<-km.done
}

// Note is what the confinement line says of the keys ("" when none is
// set).
func (km *KeyMask) Note() string {
	if km == nil || len(km.Keys) == 0 {
		return ""
	}
	var masked, not []string
	upstream := ""
	for _, k := range km.Keys {
		if k.Masked {
			masked, upstream = append(masked, k.Var), k.Upstream
		} else {
			not = append(not, k.Var+" ("+k.Why+")")
		}
	}
	var parts []string
	if len(masked) > 0 {
		to := "put back toward " + upstream + " alone"
		if km.masker == nil {
			to = "the network is denied"
		}
		parts = append(parts, "masked: "+strings.Join(masked, ", ")+" ("+to+"; the agent sees sentinels; --mask-keys=false passes the keys)")
	}
	if len(not) > 0 {
		parts = append(parts, "not masked: "+strings.Join(not, ", "))
	}
	return "agent's keys " + strings.Join(parts, "; ")
}
