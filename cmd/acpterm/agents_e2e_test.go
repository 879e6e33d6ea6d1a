package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// namedAgentConfig writes a config file that names the test binary (as
// the display fake agent) "fake", and returns the environment that makes
// acpterm read it.
func namedAgentConfig(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	cfg, err := json.Marshal(map[string]any{"fake": map[string]any{"command": []string{testExe(t)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "acpterm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "acpterm", "agents.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"XDG_CONFIG_HOME=" + home, fakeAgentEnv + "=display"}
}

// TestNamedAgents: without "--" a known name starts that agent; after
// "--" the words are the command itself; acpterm agents lists the names.
func TestNamedAgents(t *testing.T) {
	t.Parallel()
	env := namedAgentConfig(t)

	r := acpterm(t, opts{plain: true, env: env}, "run", "--format", "json", "-p", "hi", "fake")
	if r.code != 0 {
		t.Fatalf("run fake: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `"event":"stop"`) {
		t.Errorf("run fake: no stop event:\n%s", r.stdout)
	}

	r = acpterm(t, opts{plain: true, env: env}, "run", "-p", "hi", "--", "fake")
	if r.code != 3 || !strings.Contains(r.stderr, "cannot start the agent fake") {
		t.Errorf("run -- fake: exit %d, stderr %q; want 3, the command not found", r.code, r.stderr)
	}

	// login resolves names as run does.
	r = acpterm(t, opts{plain: true, env: env}, "login", "fake")
	if strings.Contains(r.stderr, "cannot start the agent") {
		t.Errorf("login fake: exit %d, the name not resolved:\n%s", r.code, r.stderr)
	}
	r = acpterm(t, opts{plain: true, env: env}, "login", "--", "fake")
	if r.code != 3 || !strings.Contains(r.stderr, "cannot start the agent fake") {
		t.Errorf("login -- fake: exit %d, stderr %q; want 3, the command not found", r.code, r.stderr)
	}

	r = acpterm(t, opts{plain: true, env: env}, "agents")
	if r.code != 0 {
		t.Fatalf("agents: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"codex", "gemini", "opencode", "claude", "qwen", "fake", "(config)", testExe(t)} {
		mustContain(t, "agents output", r.stdout, want)
	}

	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "acpterm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "acpterm", "agents.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = acpterm(t, opts{plain: true, env: []string{"XDG_CONFIG_HOME=" + bad}}, "run", "-p", "hi", "fake")
	if r.code != 2 || !strings.Contains(r.stderr, "agents.json") {
		t.Errorf("malformed config: exit %d, stderr %q; want 2 naming the file", r.code, r.stderr)
	}
}

// TestAgentConfinedByProfile: an agent whose agents.json entry names
// writable paths has a profile, so it is confined by default (its missing
// directory created 0700); --sandbox-agent=false leaves it out; an agent
// without one is not confined unless asked. The first line of stderr says
// which.
func TestAgentConfinedByProfile(t *testing.T) {
	t.Parallel()
	cfgHome, state := t.TempDir(), filepath.Join(t.TempDir(), "mine", "state")
	cfg, err := json.Marshal(map[string]any{
		"plain":    map[string]any{"command": []string{testExe(t)}},
		"profiled": map[string]any{"command": []string{testExe(t)}, "writable": []string{state}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfgHome, "acpterm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "acpterm", "agents.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CONFIG_HOME=" + cfgHome, fakeAgentEnv + "=display"}
	tests := []struct {
		flags []string
		name  string
		want  string
	}{
		{nil, "profiled", "acpterm: sandbox: agent and its commands: workspace-write"},
		{[]string{"--sandbox-agent"}, "plain", "acpterm: sandbox: agent and its commands: workspace-write"},
		{[]string{"--sandbox", "read-only"}, "profiled", "acpterm: sandbox: agent and its commands: read-only"},
		// Without a terminal, the line is only there for a confined agent.
		{[]string{"--sandbox-agent=false"}, "profiled", ""},
		{nil, "plain", ""},
		{[]string{"--sandbox", "off"}, "profiled", ""},
	}
	for _, tt := range tests {
		args := append(append([]string{"run"}, tt.flags...), "-p", "hi", tt.name)
		r := acpterm(t, opts{plain: true, env: env}, args...)
		if r.code != 0 {
			t.Errorf("%q: exit %d\n%s", args, r.code, r.stderr)
			continue
		}
		first, _, _ := strings.Cut(r.stderr, "\n")
		if tt.want == "" && strings.Contains(r.stderr, "acpterm: sandbox:") || !strings.HasPrefix(first, tt.want) {
			t.Errorf("%q: stderr %q, want its first line to start %q", args, r.stderr, tt.want)
		}
	}
	if fi, err := os.Stat(state); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("the profile's directory %s: %v, %v; want it made, mode 0700", state, fi, err)
	}
}
