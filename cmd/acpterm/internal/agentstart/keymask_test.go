package agentstart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// TestNewKeyMask: which keys are masked, toward where, and what the
// agent's environment gets; what is not masked says why.
func TestNewKeyMask(t *testing.T) {
	login := filepath.Join(t.TempDir(), ".credentials.json")
	if err := os.WriteFile(login, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	claude := []string{"/usr/bin/claude-agent-acp"}
	for _, tt := range []struct {
		name     string
		command  []string
		env      map[string]string
		network  sandbox.Network
		creds    []string
		masked   string // the masked variables, comma-separated
		upstream string
		base     string // the base URL's path the agent gets, "-" for none
		not      string // a not-masked variable's reason, in part
	}{
		{name: "claude, default host", command: claude, env: map[string]string{"ANTHROPIC_API_KEY": "k1"},
			masked: "ANTHROPIC_API_KEY", upstream: "https://api.anthropic.com", base: ""},
		{name: "claude, both, user's base with a path", command: claude,
			env:    map[string]string{"ANTHROPIC_API_KEY": "k1", "ANTHROPIC_AUTH_TOKEN": "k2", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/gw/v1"},
			masked: "ANTHROPIC_API_KEY,ANTHROPIC_AUTH_TOKEN", upstream: "http://127.0.0.1:9", base: "/gw/v1"},
		{name: "claude, network deny", command: claude, env: map[string]string{"ANTHROPIC_API_KEY": "k1"}, network: sandbox.DenyNetwork,
			masked: "ANTHROPIC_API_KEY", upstream: "https://api.anthropic.com", base: "-"},
		{name: "claude, a base URL that is not one", command: claude, env: map[string]string{"ANTHROPIC_API_KEY": "k1", "ANTHROPIC_BASE_URL": "ftp://x"},
			base: "-", not: "ANTHROPIC_BASE_URL is not an http or https URL"},
		{name: "claude, one value twice", command: claude, env: map[string]string{"ANTHROPIC_API_KEY": "k1", "ANTHROPIC_AUTH_TOKEN": "k1"},
			masked: "ANTHROPIC_API_KEY,ANTHROPIC_AUTH_TOKEN", upstream: "https://api.anthropic.com", base: ""},
		{name: "claude, one key in the other", command: claude, env: map[string]string{"ANTHROPIC_API_KEY": "k1", "ANTHROPIC_AUTH_TOKEN": "xk1x"},
			base: "-", not: "contain one another"},
		{name: "claude, login file", command: claude, creds: []string{login, login + ".missing"}, base: "-", not: "its login is a file"},
		{name: "codex", command: []string{"codex-acp"}, env: map[string]string{"OPENAI_API_KEY": "k1"}, base: "-", not: "config.toml"},
		{name: "gemini", command: []string{"gemini", "--acp"}, env: map[string]string{"GEMINI_API_KEY": "k1", "GOOGLE_API_KEY": "k2"},
			masked: "GEMINI_API_KEY", upstream: "https://generativelanguage.googleapis.com", base: "", not: "Vertex AI"},
		{name: "gemini, one key in both", command: []string{"gemini"}, env: map[string]string{"GEMINI_API_KEY": "k1", "GOOGLE_API_KEY": "k1"},
			masked: "GEMINI_API_KEY,GOOGLE_API_KEY", upstream: "https://generativelanguage.googleapis.com", base: ""},
		{name: "qwen", command: []string{"qwen"}, env: map[string]string{"OPENAI_API_KEY": "k1"},
			masked: "OPENAI_API_KEY", upstream: "https://api.openai.com", base: "/v1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			km, err := newKeyMask(tt.command, func(k string) string { return tt.env[k] }, tt.network, tt.creds)
			if err != nil {
				t.Fatal(err)
			}
			defer km.Close()
			if km == nil {
				t.Fatal("nil KeyMask")
			}
			var masked, not []string
			for _, k := range km.Keys {
				if k.Masked {
					masked = append(masked, k.Var)
					if k.Upstream != tt.upstream {
						t.Errorf("%s toward %s, want %s", k.Var, k.Upstream, tt.upstream)
					}
				} else {
					not = append(not, k.Var+": "+k.Why)
				}
			}
			if strings.Join(masked, ",") != tt.masked {
				t.Errorf("masked %v, want %s", masked, tt.masked)
			}
			if tt.not != "" && !strings.Contains(strings.Join(not, "; "), tt.not) || tt.not == "" && len(not) > 0 {
				t.Errorf("not masked: %v, want one saying %q", not, tt.not)
			}
			env := km.apply([]string{"ANTHROPIC_API_KEY=k1", "GEMINI_API_KEY=k1", "OPENAI_API_KEY=k1", "OTHER=1"})
			for _, v := range masked {
				if got := envValue(env, v); !strings.HasPrefix(got, sentinelPrefix) || len(got) != len(sentinelPrefix)+32 {
					t.Errorf("%s=%s", v, got)
				}
			}
			if envValue(env, "OTHER") != "1" {
				t.Errorf("OTHER lost: %v", env)
			}
			base := "-"
			for _, kv := range km.env {
				if name, v, _ := strings.Cut(kv, "="); strings.HasSuffix(name, "_BASE_URL") {
					if !strings.HasPrefix(v, "http://127.0.0.1:") {
						t.Errorf("%s", kv)
					}
					base = v[strings.Index(v[7:], "/")+7:]
					if !strings.Contains(v[7:], "/") {
						base = ""
					}
				}
			}
			if base != tt.base {
				t.Errorf("base URL path %q, want %q (%v)", base, tt.base, km.env)
			}
		})
	}
	if km, err := newKeyMask([]string{"my-agent"}, func(string) string { return "x" }, sandbox.AllowNetwork, nil); km != nil || err != nil {
		t.Errorf("an agent without a profile: %v, %v", km, err)
	}
}

// envValue is the last value of name in env.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, _ := strings.Cut(kv, "="); n == name {
			v = val
		}
	}
	return v
}
