package agents

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// onPath is a LookPath that finds exactly the given programs.
func onPath(progs ...string) func(string) (string, error) {
	return func(p string) (string, error) {
		if slices.Contains(progs, p) {
			return "/usr/bin/" + p, nil
		}
		return "", errors.New("not found")
	}
}

func TestResolve(t *testing.T) {
	reg, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	codex, ok := reg.Lookup("codex")
	if !ok {
		t.Fatal("no codex")
	}
	gemini, _ := reg.Lookup("gemini")
	tests := []struct {
		name  string
		a     Agent
		path  []string
		want  string
		how   How
		error string
	}{
		{"installed", codex, []string{"codex-acp", "npx"}, "codex-acp", Installed, ""},
		{"npx", gemini, []string{"npx"}, "npx -y @google/gemini-cli --acp", ViaNpx, ""},
		{"nothing", codex, nil, "", NotInstalled, "npm install -g @agentclientprotocol/codex-acp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg.LookPath = onPath(tt.path...)
			cmd, how, err := reg.Resolve(tt.a)
			if got := strings.Join(cmd, " "); got != tt.want || how != tt.how {
				t.Errorf("Resolve = %q, %v; want %q, %v", got, how, tt.want, tt.how)
			}
			if (err == nil) != (tt.error == "") || err != nil && !strings.Contains(err.Error(), tt.error) {
				t.Errorf("error %v, want one containing %q", err, tt.error)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "agents.json")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg, err := Load(write(`{"codex": {"command": ["my-codex", "--fast"]}, "mine": {"command": ["/opt/agent"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reg.Names(), []string{"claude", "codex", "gemini", "mine", "omp", "opencode", "pi", "qwen"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	codex, _ := reg.Lookup("codex")
	if !codex.FromConfig || codex.Package != "" || !slices.Equal(codex.Command, []string{"my-codex", "--fast"}) {
		t.Errorf("codex from the config: %+v", codex)
	}
	for _, bad := range []string{`{"x": {"command": []}}`, `{"a b": {"command": ["x"]}}`, `{"x": ["y"]}`, `not json`} {
		if _, err := Load(write(bad)); err == nil || !strings.Contains(err.Error(), "agents.json") {
			t.Errorf("Load(%s): %v, want an error naming the file", bad, err)
		}
	}
}
