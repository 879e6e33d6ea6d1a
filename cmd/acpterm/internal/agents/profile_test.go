package agents

import (
	"errors"
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
		cacheHome   string
	}{
		{"codex-acp", false, []string{"/c"}, nil, ""},
		// npm's cache is not the agent's to write, whatever
		// npm_config_cache says: the client gives it one of acpterm's.
		{"claude-agent-acp", true, []string{"/cc"}, nil, ""},
		{"opencode", false, []string{"/d/opencode", "/h/.local/state/opencode", "/h/.cache/opencode", "/h/.config/opencode"}, nil, "/h/.cache"},
	}
	for _, tt := range tests {
		p := profiles[tt.prog]
		p.Npx = tt.npx
		r, err := p.Resolve(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Dirs, tt.dirs) || !slices.Equal(r.Files, tt.files) || r.CacheHome != tt.cacheHome {
			t.Errorf("%s: dirs %q files %q cache home %q; want %q %q %q", tt.prog, r.Dirs, r.Files, r.CacheHome, tt.dirs, tt.files, tt.cacheHome)
		}
	}
	// With CLAUDE_CONFIG_DIR set, Claude Code keeps its global config in
	// it: no shadow, and the file is named as unprotected.
	r, err := profiles["claude-agent-acp"].Resolve(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Shadows) != 0 || len(r.Unprotected) != 1 || !strings.HasPrefix(r.Unprotected[0], "/cc/.claude.json: ") {
		t.Errorf("with CLAUDE_CONFIG_DIR set: shadows %+v, unprotected %q", r.Shadows, r.Unprotected)
	}
	r, err = profiles["claude-agent-acp"].Resolve(env(map[string]string{"HOME": "/h"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ResolvedShadow{{Var: "CLAUDE_CONFIG_DIR", Dir: "/h/.claude", File: "/h/.claude.json", Path: "/h/.claude/.claude.json", Seed: claudeJSON}}
	if !slices.Equal(r.Shadows, want) || len(r.Unprotected) != 0 || len(r.Files) != 0 {
		t.Errorf("shadows %+v, unprotected %q, files %q; want %+v, none, none", r.Shadows, r.Unprotected, r.Files, want)
	}
	if got := r.ShadowEnv(); !slices.Equal(got, []string{"CLAUDE_CONFIG_DIR=/h/.claude"}) {
		t.Errorf("ShadowEnv() = %q", got)
	}
	if _, err := profiles["codex-acp"].Resolve(env(map[string]string{"HOME": "rel"}), nil); err == nil {
		t.Error("Resolve with a relative HOME: no error")
	}
}

// TestPrepare: missing directories are made 0700, a missing file is made
// with its seed, an existing file is left as it is, and a directory where
// a file should be is an error. The file is claude's ~/.claude.json, which
// the agent writes itself under --writable-config (Unshadowed).
func TestPrepare(t *testing.T) {
	home := t.TempDir()
	p := profiles["claude-agent-acp"]
	extraDir := filepath.Join(home, "extra", "state")
	r, err := p.Resolve(env(map[string]string{"HOME": home}), []string{extraDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unshadowed(); err != nil {
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
	if err := r.Unshadowed(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
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
			err = errors.Join(r.Unshadowed(), r.Prepare())
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

// TestPrepareShadows: claude's copy of ~/.claude.json is made from the
// original when missing (or holds the seed when there is none), and is
// left as the confined agent left it after that; the original is never
// written; a link the agent left in the copy's place is not written
// through; a FIFO as the original is an error, not a read that blocks.
func TestPrepareShadows(t *testing.T) {
	home := t.TempDir()
	p := profiles["claude-agent-acp"]
	r, err := p.Resolve(env(map[string]string{"HOME": home}), nil)
	if err != nil {
		t.Fatal(err)
	}
	orig, copyPath := filepath.Join(home, ".claude.json"), filepath.Join(home, ".claude", ".claude.json")
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }

	if err := errors.Join(r.Prepare(), r.PrepareShadows()); err != nil {
		t.Fatal(err)
	}
	if got := read(copyPath); got != claudeJSON {
		t.Errorf("with no original, the copy holds %q, want the seed", got)
	}
	if exists(orig) {
		t.Errorf("the original was created")
	}

	// The user's own, and a fresh start: the copy is made from it.
	users := `{"mcpServers":{"mine":{"command":"my-server"}}}`
	if err := os.WriteFile(orig, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(copyPath)
	if err := r.PrepareShadows(); err != nil {
		t.Fatal(err)
	}
	if got := read(copyPath); got != users {
		t.Errorf("the copy holds %q, want the original's %q", got, users)
	}
	if fi, err := os.Stat(copyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy: %v, %v; want mode 0600", fi, err)
	}

	// What the confined agent wrote stays, and the original is untouched.
	planted := `{"mcpServers":{"x":{"command":"touch /tmp/marker"}}}`
	if err := os.WriteFile(copyPath, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.PrepareShadows(); err != nil {
		t.Fatal(err)
	}
	if got := read(copyPath); got != planted {
		t.Errorf("the agent's copy was replaced: %q", got)
	}
	if got := read(orig); got != users {
		t.Errorf("the original holds %q, want the user's %q", got, users)
	}

	// A link in the copy's place, to a file of the user's.
	bashrc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(copyPath)
	if err := os.Symlink(bashrc, copyPath); err != nil {
		t.Fatal(err)
	}
	if err := r.PrepareShadows(); err != nil {
		t.Fatal(err)
	}
	if got := read(bashrc); got != "# mine\n" {
		t.Errorf(".bashrc was written through the link: %q", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(home, ".claude", ".*.acpterm-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %q", leftovers)
	}

	// A FIFO as the original.
	os.Remove(copyPath)
	os.Remove(orig)
	if err := mkfifo(orig); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := r.PrepareShadows(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("with a FIFO as the original: %v", err)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }
