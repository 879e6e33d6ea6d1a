//go:build realagents

package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealAgentsKeyMask takes claude-agent-acp through the scripted turn
// confined with its key masked, on the default network and under
// --network proxy (the masking endpoint forwarded into the namespace,
// the model server on no list), and gemini and qwen on the default
// network: the turn completes, the model server
// received the real key in every request, and the command the model had
// the agent run found no key in its environment. codex-acp, whose API
// host comes from config.toml, is not masked, says so, and completes as
// before. Claude runs in its bypassPermissions mode: in its default
// auto mode a classifier request to the (scripted) model decides on
// commands other than the plainest, and blocks env's.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsKeyMask -v
func TestRealAgentsKeyMask(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	const key = "secret-real-123"
	byName := func(name string) scriptedAgent {
		i := slices.IndexFunc(scriptedAgents, func(a scriptedAgent) bool { return a.name == name })
		if i < 0 {
			t.Fatalf("no scripted agent %s", name)
		}
		return scriptedAgents[i]
	}
	for i, tt := range []struct {
		name, agent, keyVar, line string
		flags                     []string
		masked                    bool
	}{
		{"claude", "claude", "ANTHROPIC_API_KEY", "agent's keys masked: ANTHROPIC_API_KEY", []string{"--sandbox-agent", "--mode", "bypassPermissions"}, true},
		{"claude network proxy", "claude", "ANTHROPIC_API_KEY", "agent's keys masked: ANTHROPIC_API_KEY", []string{"--sandbox-agent", "--mode", "bypassPermissions", "--network", "proxy"}, true},
		{"claude unmasked", "claude", "ANTHROPIC_API_KEY", "", []string{"--sandbox-agent", "--mode", "bypassPermissions", "--mask-keys=false"}, false},
		{"gemini", "gemini", "GEMINI_API_KEY", "agent's keys masked: GEMINI_API_KEY", []string{"--sandbox-agent"}, true},
		{"qwen", "qwen", "OPENAI_API_KEY", "agent's keys masked: OPENAI_API_KEY", []string{"--sandbox-agent"}, true},
		{"codex", "codex", "OPENAI_API_KEY", "agent's keys not masked: OPENAI_API_KEY (codex-acp takes its API host from config.toml", []string{"--sandbox-agent"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := byName(tt.agent)
			marker := fmt.Sprintf("%smask%d", tt.agent, i)
			// The command prints the marker, and how many variables of
			// its environment hold the key (the key itself is not in
			// the line, which the agent shows).
			tmpl := `printf '%%s-%%s\n' acpterm-real %s; env | grep secret-real-1 | wc -l | sed s/^/envkeys=/`
			a.command = fmt.Sprintf(tmpl, marker)
			s := runScripted(t, bin, a, tt.flags, marker, "", tt.keyVar+"="+key)
			r := s.r
			t.Logf("exit %d after %v; tool called %v, ran %v\nstderr:\n%.3000s", r.code, r.elapsed.Round(time.Millisecond), s.called, s.ran, r.stderr)
			if r.code != 0 || !s.ran {
				t.Fatalf("the turn did not complete: exit %d, the command's output back %v\nstdout:\n%.3000s", r.code, s.ran, r.stdout)
			}
			mustContain(t, "stderr", r.stderr, tt.line)
			auths := s.m.Auths()
			for _, au := range auths {
				if !strings.Contains(au, key) {
					t.Errorf("the model server got a request without the key: %s", au)
				}
			}
			leaked := !slices.ContainsFunc(s.m.Calls(), func(c modelCall) bool { return strings.Contains(c.Result, "envkeys=0") })
			if leaked == tt.masked {
				t.Errorf("the agent's command found the key in its environment: %v (masked: %v)", leaked, tt.masked)
			}
			t.Logf("%d requests, each with the key", len(auths))
		})
	}
}
