package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestProfileFor: a profile is found by the program's base name, or by the
// package of an npx line, and is none for anything else.
func TestProfileFor(t *testing.T) {
	reg, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd     []string
		ok, npx bool
		dir     string // a directory its profile names, at HOME=/h
	}{
		{[]string{"codex-acp"}, true, false, "/h/.codex"},
		{[]string{"/opt/node/bin/claude-agent-acp", "--x"}, true, false, "/h/.claude"},
		{[]string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, true, true, "/h/.claude"},
		{[]string{"npx", "-y", "@agentclientprotocol/codex-acp@2.6.0"}, true, true, "/h/.codex"},
		// The former packages of the same programs, pinned in agents.json.
		{[]string{"npx", "-y", "@zed-industries/claude-agent-acp@0.23.1"}, true, true, "/h/.claude"},
		{[]string{"npx", "-y", "@zed-industries/codex-acp@0.16.0"}, true, true, "/h/.codex"},
		{[]string{"npx", "-y", "@google/gemini-cli", "--acp"}, true, true, "/h/.gemini"},
		{[]string{"omp", "--mode", "acp"}, true, false, "/h/.omp"},
		{[]string{"/usr/local/bin/pi-acp"}, true, false, "/h/.pi"},
		{[]string{"opencode", "acp"}, true, false, "/h/.local/share/opencode"},
		{[]string{"qwen"}, true, false, "/h/.qwen"},
		{[]string{"npx", "-y", "some-other-agent"}, false, false, ""},
		{[]string{"my-agent"}, false, false, ""},
		{nil, false, false, ""},
	}
	for _, tt := range tests {
		p, ok := reg.ProfileFor(tt.cmd)
		if ok != tt.ok || p.Npx != tt.npx {
			t.Errorf("ProfileFor(%q) = %+v, %v; want ok %v, npx %v", tt.cmd, p, ok, tt.ok, tt.npx)
			continue
		}
		if !ok {
			continue
		}
		r, err := p.Resolve(env(map[string]string{"HOME": "/h"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.Dirs, tt.dir) {
			t.Errorf("ProfileFor(%q) writes %q, want %s among them", tt.cmd, r.Dirs, tt.dir)
		}
	}
}

// TestResolveFollowsEnv: the agent's own variables place its state.
func TestResolveFollowsEnv(t *testing.T) {
	e := env(map[string]string{"HOME": "/h", "CODEX_HOME": "/c", "XDG_DATA_HOME": "/d", "CLAUDE_CONFIG_DIR": "/cc",
		"XDG_CACHE_HOME": "relative/ignored", "npm_config_cache": "/npm"})
	tests := []struct {
		prog        string
		npx         bool
		dirs, files []string
	}{
		{"codex-acp", false, []string{"/c"}, nil},
		// npm's cache is not the agent's to write, whatever
		// npm_config_cache says: the client gives it one of acpterm's.
		{"claude-agent-acp", true, []string{"/cc"}, []string{"/cc/.claude.json"}},
		{"opencode", false, []string{"/d/opencode", "/h/.local/state/opencode", "/h/.cache/opencode", "/h/.config/opencode"}, nil},
	}
	for _, tt := range tests {
		p := profiles[tt.prog]
		p.Npx = tt.npx
		r, err := p.Resolve(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Dirs, tt.dirs) || !slices.Equal(r.Files, tt.files) {
			t.Errorf("%s: dirs %q files %q; want %q %q", tt.prog, r.Dirs, r.Files, tt.dirs, tt.files)
		}
	}
	if _, err := profiles["codex-acp"].Resolve(env(map[string]string{"HOME": "rel"}), nil); err == nil {
		t.Error("Resolve with a relative HOME: no error")
	}
}

// TestPrepare: missing directories are made 0700, a missing file is made
// with its seed, an existing file is left as it is, and a directory where
// a file should be is an error.
func TestPrepare(t *testing.T) {
	home := t.TempDir()
	p := profiles["claude-agent-acp"]
	extraDir := filepath.Join(home, "extra", "state")
	r, err := p.Resolve(env(map[string]string{"HOME": home}), []string{extraDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(home, ".claude"), extraDir} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a directory, mode 0700", d, fi, err)
		}
	}
	cj := filepath.Join(home, ".claude.json")
	if b, err := os.ReadFile(cj); err != nil || string(b) != claudeJSON {
		t.Errorf("%s = %q, %v; want %q", cj, b, err, claudeJSON)
	}
	if err := os.WriteFile(cj, []byte(`{"mine":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Prepare(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(cj); string(b) != `{"mine":1}` {
		t.Errorf("an existing %s was rewritten: %q", cj, b)
	}
	if !slices.Contains(r.Paths(), cj) || !slices.Contains(r.Paths(), extraDir) {
		t.Errorf("Paths() = %q", r.Paths())
	}

	bad := t.TempDir()
	if err := os.Mkdir(filepath.Join(bad, ".claude.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	r, _ = p.Resolve(env(map[string]string{"HOME": bad}), nil)
	if err := r.Prepare(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Prepare with a directory as .claude.json: %v", err)
	}
}

// TestConfigWritable: an agents.json entry's writable paths are expanded
// and checked.
func TestConfigWritable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "agents.json")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg, err := Load(write(`{"mine": {"command": ["/opt/agent"], "writable": ["~/.mine", "/var/lib/mine/", "~"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Lookup("mine")
	if want := []string{filepath.Join(home, ".mine"), "/var/lib/mine", home}; !slices.Equal(a.Writable, want) {
		t.Errorf("Writable = %q, want %q", a.Writable, want)
	}
	for _, bad := range []string{`["rel/path"]`, `[""]`, `["/"]`, `["~user/x"]`, `"~/.x"`, `["/a\u0000b"]`} {
		if _, err := Load(write(`{"mine": {"command": ["x"], "writable": ` + bad + `}}`)); err == nil || !strings.Contains(err.Error(), "agents.json") {
			t.Errorf("writable %s: %v, want an error naming the file", bad, err)
		}
	}
}

// TestPrepareRefusesPlantedLinks: a link that a sandboxed command could
// have made (in ~/.cache, which commands may write) in place of a
// profile's directory, of a lasting cache's parent, or of its file, is an
// error naming it, and nothing is made or written through it.
func TestPrepareRefusesPlantedLinks(t *testing.T) {
	for _, tt := range []struct {
		agent, link, target string
	}{
		{"opencode", ".cache/opencode", "."},
		{"pi-acp", ".cache/acpterm", "."},
		{"claude-agent-acp", ".claude.json", ".bashrc"},
	} {
		t.Run(tt.agent, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			bashrc := "# the user's own\n"
			if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(bashrc), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(home, tt.link)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(home, tt.target), link); err != nil {
				t.Fatal(err)
			}
			r, err := profiles[tt.agent].Resolve(env(map[string]string{"HOME": home}), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Prepare()
			if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symlink") {
				t.Errorf("Prepare = %v, want an error naming the link %s", err, link)
			}
			if _, err := os.Stat(filepath.Join(home, "node-compile-cache")); err == nil {
				t.Error("a directory was made through the link")
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != bashrc {
				t.Errorf(".bashrc was written through the link: %q", b)
			}
		})
	}
}
