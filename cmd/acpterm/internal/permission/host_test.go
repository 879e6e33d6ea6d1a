package permission

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
)

// TestHostQuestion: the question names the host and who connects as
// acpterm knows it, with the command's escapes made visible and a long
// command line clipped.
func TestHostQuestion(t *testing.T) {
	target := netproxy.Target{Host: "pkg.example.com", Port: 443}
	cmdClient := terminal.ProxyClient(terminal.Info{TerminalID: "term_0a1b", Command: "curl", Args: []string{"https://pkg.example.com/" + rendertest.Evil}})
	tests := []struct {
		name, client string
		want         []string
	}{
		{"command", cmdClient, []string{"the command curl $'https://pkg.example.com/<", "(terminal term_0a1b) wants to connect to pkg.example.com:443, which is not on the allow-list"}},
		{"agent", AgentProxyClient, []string{"acpterm: network: the agent itself (or a program it started) wants to connect to pkg.example.com:443"}},
		{"unnamed", "", []string{"a command of this run that did not name itself"}},
		{"forged", "the agent itself", []string{"a command of this run that did not name itself"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := hostQuestion(netproxy.Question{Protocol: "connect", Target: target, Client: tt.client})
			for _, w := range tt.want {
				if !strings.Contains(q, w) {
					t.Errorf("question lacks %q:\n%s", w, q)
				}
			}
			if !strings.Contains(q, "[y]es, this connection once; [a]lways, pkg.example.com:443 for the rest of this run; [n]o: ") {
				t.Errorf("question lacks its choices:\n%s", q)
			}
			if off := rendertest.ScreenOffence(q); off != "" {
				t.Errorf("question %q: %s", q, off)
			}
		})
	}
	long := terminal.ProxyClient(terminal.Info{TerminalID: "term_1", Command: strings.Repeat("x", 1<<20)})
	if q := hostQuestion(netproxy.Question{Target: target, Client: long}); len(q) > 2*render.MaxFitCommand {
		t.Errorf("a 1 MiB command line makes a question of %d bytes", len(q))
	}
}

// FuzzHostQuestion: whatever the command line and host, the question
// is valid UTF-8 with no escape a terminal would act on, of bounded
// length, and always shows its choices.
func FuzzHostQuestion(f *testing.F) {
	f.Add("curl https://x", "api.example.com", uint16(443))
	f.Add(rendertest.Evil, "\x1b]0;x\x07", uint16(1))
	f.Add("term_1 a", strings.Repeat("a.", 200), uint16(65535))
	f.Fuzz(func(t *testing.T, line, host string, port uint16) {
		for _, client := range []string{"term_0a " + line, line, AgentProxyClient} {
			q := hostQuestion(netproxy.Question{Target: netproxy.Target{Host: host, Port: port}, Client: client})
			if !utf8.ValidString(q) {
				t.Fatalf("invalid UTF-8: %q", q)
			}
			if off := rendertest.ScreenOffence(q); off != "" {
				t.Fatalf("%q: %s", q, off)
			}
			if len(q) > 2*render.MaxFitCommand+4096 {
				t.Fatalf("%d bytes", len(q))
			}
			if !strings.HasSuffix(q, "; [n]o: ") {
				t.Fatalf("no choices: %q", q)
			}
		}
	})
}
