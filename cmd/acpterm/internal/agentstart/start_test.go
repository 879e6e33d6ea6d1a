package agentstart

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/sandbox"
)

// TestNpmCacheKey: a confined agent's cache is named for its package, made
// safe as a file name; unconfined agents share one.
func TestNpmCacheKey(t *testing.T) {
	for _, tc := range []struct {
		agent    []string
		confined bool
		want     string
	}{
		{[]string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, true, "confined-@agentclientprotocol+claude-agent-acp"},
		{[]string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}, true, "confined-@agentclientprotocol+claude-agent-acp"},
		{[]string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, false, "unconfined"},
		{[]string{"npx", "-y", "../../x"}, true, "confined-..+..+x"},
		{[]string{"npx", "-y"}, true, "confined-+"},
		{[]string{"npx", ".."}, true, "confined-+"},
	} {
		if got := npmCacheKey(tc.agent, tc.confined); got != tc.want {
			t.Errorf("npmCacheKey(%q, %v) = %q, want %q", tc.agent, tc.confined, got, tc.want)
		}
	}
}

// TestAgentStartNpx: an agent started through npx starts in acpterm's npx
// directory with acpterm's npm cache for unconfined agents, 0700; where
// the workspace holds the state directory, both are in the system's
// temporary directory instead.
func TestAgentStartNpx(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	t.Setenv("XDG_STATE_HOME", state)
	agent := []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}
	for _, tc := range []struct {
		name     string
		ws       string
		npx, npm string
	}{
		{"elsewhere", t.TempDir(), filepath.Join(state, "acpterm", "npx"), filepath.Join(state, "acpterm", "npm", "unconfined")},
		{"workspace holds the state", home, "", filepath.Join(os.TempDir(), "acpterm-npm-"+strconv.Itoa(os.Geteuid()), "unconfined")},
	} {
		s := &Start{Agent: agent, Dir: tc.ws, Policy: &sandbox.Policy{Writable: []string{tc.ws}}}
		cmd, a, err := s.Command()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Without a policy (sessions, login), in the current directory.
		t.Chdir(tc.ws)
		s = &Start{Agent: agent}
		cmd2, _, err := s.Command()
		if err != nil {
			t.Fatalf("%s, no policy: %v", tc.name, err)
		}
		if cmd2.Dir != cmd.Dir || !slices.Equal(cmd2.Env, cmd.Env) {
			t.Errorf("%s: without a policy, in the directory: npx in %s with %q; with one, in %s with %q", tc.name, cmd2.Dir, cmd2.Env, cmd.Dir, cmd.Env)
		}
		if a != nil {
			t.Errorf("%s: unconfined, but a sandbox: %v", tc.name, a)
		}
		if tc.npx != "" && cmd.Dir != tc.npx {
			t.Errorf("%s: npx starts in %s, want %s", tc.name, cmd.Dir, tc.npx)
		}
		if Under(cmd.Dir, []string{tc.ws}) {
			t.Errorf("%s: npx starts in %s, in the workspace", tc.name, cmd.Dir)
		}
		if !slices.Contains(cmd.Env, "npm_config_cache="+tc.npm) {
			t.Errorf("%s: environment %q lacks npm_config_cache=%s", tc.name, cmd.Env, tc.npm)
		}
		if fi, err := os.Lstat(tc.npm); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: the cache: %v, %v; want a directory 0700", tc.name, fi, err)
		}
	}
}

// TestAgentStartNpxConfinedCache: a confined agent started through npx
// runs from an npm cache of its own, not from the run's commands' npm
// cache below CacheDir, which every sandboxed command writes; the rest of
// CacheDir's variables reach it, for the commands it runs itself.
func TestAgentStartNpxConfinedCache(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	ws, cacheDir := t.TempDir(), filepath.Join(t.TempDir(), "sandbox-cache")
	s := &Start{Agent: []string{"npx", "-y", "@zed-industries/claude-agent-acp"}, Dir: ws, Confine: true,
		Policy: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{ws}, CacheDir: cacheDir, BestEffort: true, WithoutMountNamespace: true}}
	cmd, a, err := s.Command()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Cleanup()
	last := func(name string) string {
		v := ""
		for _, kv := range cmd.Env {
			if k, x, _ := strings.Cut(kv, "="); k == name {
				v = x
			}
		}
		return v
	}
	if got, want := last("npm_config_cache"), filepath.Join(state, "acpterm", "npm", npmCacheKey(s.Agent, true)); got != want {
		t.Errorf("npm_config_cache = %s, want the agent's own %s", got, want)
	}
	if got, want := last("GOCACHE"), filepath.Join(cacheDir, "go-build"); got != want {
		t.Errorf("GOCACHE = %s, want %s", got, want)
	}
	// An agent that keeps state in XDG_CACHE_HOME (opencode) is given the
	// user's back, where its profile made that state writable, rather
	// than the commands' own, which every sandboxed command writes.
	prof := &agents.Resolved{Dirs: []string{filepath.Join(state, "oc")}, CacheHome: "/home/u/.cache"}
	oc := exec.Command("/bin/true")
	oc.Env = []string{"XDG_CACHE_HOME=" + filepath.Join(cacheDir, "xdg")}
	agentEnv(oc, &sandbox.Applied{TempDir: "/tmp/t"}, prof, false)
	if got := oc.Env[len(oc.Env)-1]; got != "XDG_CACHE_HOME=/home/u/.cache" {
		t.Errorf("opencode's environment ends in %q, want its XDG_CACHE_HOME back", got)
	}

	// Read-only mode: the agent's own state only, no caches.
	p, err := agentPolicy(&sandbox.Policy{Mode: sandbox.ReadOnly, CacheDir: cacheDir}, &agents.Resolved{Dirs: []string{ws}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.CacheDir != "" {
		t.Errorf("read-only: CacheDir %q, want none", p.CacheDir)
	}
}

// TestNpmCacheDirNotALink: a cache directory that is a symlink (one a
// command could have made) is not used.
func TestNpmCacheDirNotALink(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if err := os.MkdirAll(filepath.Join(state, "acpterm", "npm"), 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(state, "acpterm", "npm", "unconfined")); err != nil {
		t.Fatal(err)
	}
	dir, err := npmCacheDir("unconfined", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(dir, state) {
		t.Errorf("npmCacheDir = %s, through the symlink to %s", dir, elsewhere)
	}
}

// TestAgentPolicyCache: the confined agent writes its profile's paths and
// its npm cache; in read-only mode only those; with the sandbox off,
// nothing is added.
func TestAgentPolicyCache(t *testing.T) {
	dir := t.TempDir()
	prof := &agents.Resolved{Dirs: []string{filepath.Join(dir, "state")}}
	cache := filepath.Join(dir, "cache")
	p, err := agentPolicy(&sandbox.Policy{Mode: sandbox.ReadOnly}, prof, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{prof.Dirs[0], cache}; p.Mode != sandbox.WorkspaceWrite || !slices.Equal(p.Writable, want) {
		t.Errorf("read-only: %v %q, want workspace-write %q", p.Mode, p.Writable, want)
	}
	p, err = agentPolicy(&sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{"/ws"}}, nil, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/ws", cache}; !slices.Equal(p.Writable, want) {
		t.Errorf("workspace-write: %q, want %q", p.Writable, want)
	}
	p, err = agentPolicy(&sandbox.Policy{Mode: sandbox.Off, Network: sandbox.DenyNetwork}, prof, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != sandbox.Off || len(p.Writable) != 0 {
		t.Errorf("off: %v %q", p.Mode, p.Writable)
	}
}

// TestWorkspaceConfig: a root's .opencode is made a real directory and only
// its command-bearing entries stay protected, so that opencode can write
// its .gitignore there; one deeper than a root stays protected whole; a
// link in its place is refused, and nothing is made through it.
func TestWorkspaceConfig(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	wcs := []agents.WorkspaceConfig{{Name: ".opencode", Protect: []string{"plugin", "opencode.json"}}}
	deep := filepath.Join(root, "sub", ".opencode")
	in := []string{filepath.Join(root, ".mcp.json"), filepath.Join(root, ".opencode"), deep}
	out, err := workspaceConfig(in, []string{root}, wcs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, ".mcp.json"), filepath.Join(root, ".opencode", "plugin"), filepath.Join(root, ".opencode", "opencode.json"), deep}
	if !slices.Equal(out, want) {
		t.Errorf("workspaceConfig = %q, want %q", out, want)
	}
	if fi, err := os.Lstat(filepath.Join(root, ".opencode")); err != nil || !fi.IsDir() {
		t.Errorf(".opencode: %v, %v; want a directory", fi, err)
	}

	linked := t.TempDir()
	if err := os.Symlink(other, filepath.Join(linked, ".opencode")); err != nil {
		t.Fatal(err)
	}
	if _, err := workspaceConfig([]string{filepath.Join(linked, ".opencode")}, []string{linked}, wcs); err == nil {
		t.Error("a link as .opencode: no error")
	}
}

// TestAgentStartMCPEnv: the profile's MCPEnv reaches the agent, confined or
// not, when the run offers its MCP server, and only then.
func TestAgentStartMCPEnv(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	const want = "QWEN_CODE_LEGACY_MCP_BLOCKING=1"
	for _, tc := range []struct {
		name    string
		confine bool
		addr    string
		set     bool
	}{
		{"unconfined, offered", false, "127.0.0.1:4000", true},
		{"confined, offered", true, "127.0.0.1:4000", true},
		{"unconfined, not offered", false, "", false},
		{"confined, not offered", true, "", false},
	} {
		ws := t.TempDir()
		s := &Start{Agent: []string{"qwen", "--acp"}, Dir: ws, Confine: tc.confine, MCPAddr: tc.addr,
			Profile: &agents.Resolved{Dirs: []string{filepath.Join(ws, ".qwen")}, MCPEnv: []string{want}},
			Policy:  &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{ws}, BestEffort: true, WithoutMountNamespace: true}}
		cmd, a, err := s.Command()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if a != nil {
			a.Cleanup()
		}
		if got := slices.Contains(cmd.Env, want); got != tc.set {
			t.Errorf("%s: %s in the agent's environment: %v, want %v", tc.name, want, got, tc.set)
		}
	}
}

// TestReadOnlyWorkspaceConfig: in read-only mode an agent may write its own
// directory of the workspaces it works in where one exists (opencode
// writes .opencode/.gitignore as it starts), but not what that
// directory's Protect entries name, not a link in its place, and none is
// made where there is none.
func TestReadOnlyWorkspaceConfig(t *testing.T) {
	ws, session, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(ws, ".opencode"), filepath.Join(elsewhere, ".opencode")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The session's directory holds only a link to a directory elsewhere.
	if err := os.Symlink(filepath.Join(elsewhere, ".opencode"), filepath.Join(session, ".opencode")); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	prof := &agents.Resolved{Dirs: []string{state}, WorkspaceConfig: []agents.WorkspaceConfig{{Name: ".opencode", Protect: []string{"opencode.json", "plugins"}}}}
	p, err := agentPolicy(&sandbox.Policy{Mode: sandbox.ReadOnly}, prof, "", []string{ws, session, filepath.Join(t.TempDir(), "missing")})
	if err != nil {
		t.Fatal(err)
	}
	realWS, _ := filepath.EvalSymlinks(ws)
	own := filepath.Join(realWS, ".opencode")
	if want := []string{state, own}; !slices.Equal(p.Writable, want) {
		t.Errorf("Writable = %q, want %q", p.Writable, want)
	}
	for _, n := range []string{"opencode.json", "plugins"} {
		if !slices.Contains(p.Protected, filepath.Join(own, n)) {
			t.Errorf("Protected = %q, lacks %s", p.Protected, filepath.Join(own, n))
		}
	}
	if p.Mode != sandbox.WorkspaceWrite {
		t.Errorf("Mode = %v, want workspace-write of the agent's own paths", p.Mode)
	}
	// --writable-config: the directory's protected entries too.
	p, err = agentPolicy(&sandbox.Policy{Mode: sandbox.ReadOnly, WritableConfig: true}, prof, "", []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Writable, own) || slices.Contains(p.Protected, filepath.Join(own, "opencode.json")) {
		t.Errorf("with WritableConfig, Writable = %q and Protected = %q, want %s writable, none of it protected", p.Writable, p.Protected, own)
	}
}
