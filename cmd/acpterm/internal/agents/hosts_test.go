package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

func TestHostsFor(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(cfg, []byte(`{"mine": {"command": ["claude-agent-acp"], "allowHosts": ["llm.internal:8443"]},
		"none": {"command": ["codex-acp"], "allowHosts": []}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		command []string
		want    []string // contained
		without []string
	}{
		{"claude", []string{"claude-agent-acp"}, []string{"api.anthropic.com"}, []string{"registry.npmjs.org"}},
		{"claude", []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, []string{"api.anthropic.com", "registry.npmjs.org"}, nil},
		{"", []string{"/usr/local/bin/codex-acp"}, []string{"api.openai.com"}, nil},
		{"gemini", []string{"gemini", "--acp"}, []string{"generativelanguage.googleapis.com"}, []string{"*.googleapis.com"}},
		{"mine", []string{"claude-agent-acp"}, []string{"llm.internal:8443"}, []string{"api.anthropic.com"}},
		{"none", []string{"codex-acp"}, nil, []string{"api.openai.com"}},
		{"", []string{"some-agent"}, nil, nil},
	} {
		got := r.HostsFor(tc.name, tc.command)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("HostsFor(%q, %q) = %q, lacks %q", tc.name, tc.command, got, w)
			}
		}
		for _, w := range tc.without {
			if slices.Contains(got, w) {
				t.Errorf("HostsFor(%q, %q) = %q, has %q", tc.name, tc.command, got, w)
			}
		}
	}
	// Every built-in list parses.
	for key, hosts := range apiHosts {
		if _, err := netproxy.ParseRules(hosts); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestHostsBadEntry(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(cfg, []byte(`{"x": {"command": ["x"], "allowHosts": ["*"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "allowHosts") {
		t.Errorf("Load with allowHosts [*]: %v", err)
	}
}
