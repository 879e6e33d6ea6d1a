package agents

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProfileConfig: an agent's config paths resolve in its environment;
// PrepareConfig creates the missing files with their seed and leaves an
// existing one alone; a file protected only where present is left out
// when missing.
func TestProfileConfig(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	r, err := profiles["gemini"].Resolve(getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".gemini", "settings.json")
	dotenv := filepath.Join(home, ".gemini", ".env")
	for _, want := range []string{settings, filepath.Join(home, ".gemini", "extensions")} {
		if !slices.Contains(r.Config, want) {
			t.Errorf("Config lacks %s: %q", want, r.Config)
		}
	}
	if slices.Contains(r.Config, dotenv) {
		t.Errorf("Config has the missing %s", dotenv)
	}
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"mine":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.PrepareConfig(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(settings); string(b) != `{"mine":1}` {
		t.Errorf("PrepareConfig changed an existing settings.json: %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".gemini", "trustedFolders.json")); err != nil || string(b) != "{}\n" {
		t.Errorf("trustedFolders.json: %q, %v; want the seed", b, err)
	}
	if _, err := os.Lstat(dotenv); err == nil {
		t.Errorf("PrepareConfig created %s", dotenv)
	}
	if err := os.WriteFile(dotenv, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, _ = profiles["gemini"].Resolve(getenv, nil); !slices.Contains(r.Config, dotenv) {
		t.Errorf("Config lacks the existing %s", dotenv)
	}
	env["GEMINI_CLI_HOME"] = filepath.Join(home, "elsewhere")
	if r, _ = profiles["gemini"].Resolve(getenv, nil); !slices.Contains(r.Config, filepath.Join(home, "elsewhere", ".gemini", "settings.json")) {
		t.Errorf("Config does not follow GEMINI_CLI_HOME: %q", r.Config)
	}
}

// TestPrepareConfigParents: the parent of a config directory that lies in
// the agent's own state is made, so that the sandbox reserves the config
// directory alone rather than the parent where the agent keeps its state
// (omp's ~/.omp/agent, with agent.db beside extensions/); the config
// directories themselves are left to the sandbox.
func TestPrepareConfigParents(t *testing.T) {
	home := t.TempDir()
	r, err := profiles["omp"].Resolve(func(k string) string { return map[string]string{"HOME": home}[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PrepareConfig(); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(home, ".omp", "agent")
	if fi, err := os.Lstat(agent); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory, mode 0700", agent, fi, err)
	}
	for _, d := range []string{"extensions", "hooks", "skills"} {
		if _, err := os.Lstat(filepath.Join(agent, d)); err == nil {
			t.Errorf("PrepareConfig made %s, which is the sandbox's to reserve", d)
		}
	}
}
