package netproxy_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

func TestRules(t *testing.T) {
	rules, err := netproxy.ParseRules([]string{
		"api.example.com", "*.cdn.example.org", "git.example.net:443",
		"127.0.0.1:8080", "[::1]:9000", "2001:db8::7", "Upper.Example.COM.",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port uint16
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.example.com.", 80, true},
		{"x.api.example.com", 443, false}, // no wildcard: the name only
		{"example.com", 443, false},
		{"a.cdn.example.org", 443, true},
		{"a.b.cdn.example.org", 1, true},
		{"cdn.example.org", 443, false}, // the apex is not a subdomain
		{"xcdn.example.org", 443, false},
		{"git.example.net", 443, true},
		{"git.example.net", 22, false},
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"::1", 9000, true},
		{"[::1]", 9000, true},
		{"::ffff:127.0.0.1", 8080, true}, // mapped form of a listed address
		{"2001:db8::7", 1234, true},
		{"localhost", 8080, false}, // a name never matches an address entry
		{"upper.example.com", 1, true},
	} {
		tg, err := netproxy.ParseTarget(tc.host, tc.port)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tc.host, err)
			continue
		}
		if got := rules.Allows(tg); got != tc.want {
			t.Errorf("Allows(%s) = %v, want %v", tg, got, tc.want)
		}
	}
	if got, want := fmt.Sprint(rules.Loopback()), "[127.0.0.1:8080 [::1]:9000]"; got != want {
		t.Errorf("Loopback() = %s, want %s", got, want)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, p := range []string{
		"", "*", "*.com", "*:443", "exa mple.com", "a..b", "host:0", "host:65536",
		"host:x", "[::1", "[example.com]:80", "fe80::1%eth0", "1::2:80:x", "é.example.com",
		"-" + string(make([]byte, 300)),
	} {
		if _, err := netproxy.ParseRules([]string{p}); !errors.Is(err, netproxy.ErrBadPattern) {
			t.Errorf("ParseRules(%q) = %v, want ErrBadPattern", p, err)
		}
	}
}

func TestParseTargetErrors(t *testing.T) {
	for _, h := range []string{"", "a b", "a..b", "[example.com]", "fe80::1%eth0", "x\x00y"} {
		if _, err := netproxy.ParseTarget(h, 80); err == nil {
			t.Errorf("ParseTarget(%q) succeeded", h)
		}
	}
	if _, err := netproxy.ParseTarget("example.com", 0); err == nil {
		t.Error("ParseTarget with port 0 succeeded")
	}
}
