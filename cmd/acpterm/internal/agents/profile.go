package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/sandbox"
)

// A Profile is what an agent must be able to write to work when it runs
// confined as a whole (acpterm run --sandbox-agent): its state and config
// under the home directory, and the variables through which it finds its
// temporary directory. Paths are resolved from the agent's own environment
// at run time (Resolve), never from acpterm's defaults, so that an agent
// started with CODEX_HOME or XDG_DATA_HOME set finds its state where it
// looks for it.
type Profile struct {
	// Dirs are directories the agent writes, with everything below them.
	Dirs []PathSpec
	// Files are single files the agent writes, outside any of Dirs.
	Files []PathSpec
	// TempEnv names the variables the agent reads for its temporary
	// directory, besides TMPDIR; each is pointed at the agent's private
	// TMPDIR.
	TempEnv []string
	// RootEnv is set in the agent's environment when it is confined and
	// acpterm runs as root: agents that refuse to run as root outside a
	// sandbox accept it then, and it is true.
	RootEnv []string
	// Npx: started through npx, the agent also writes npm's cache: one
	// of acpterm's own, which the client makes writable when it confines
	// the agent (see cmd/acpterm/internal/client's AgentStart).
	Npx bool
	// PTY: the agent runs its commands in a pseudo-terminal (node-pty).
	// The sandbox gives a confined program a devpts instance of its own,
	// where there is a mount namespace (sandbox.Applied.PrivatePTS); the
	// host's /dev/pts is never made writable, since it holds the user's
	// own terminals. Under Landlock alone such an agent's commands fail.
	PTY bool
	// NotByDefault, when set, says why the agent is not confined unless
	// --sandbox-agent asks: its profile does not yet let it work.
	NotByDefault string
	// ConfinedArgs are added to the agent's command line when acpterm
	// confines it: settings that turn off a sandbox of the agent's own,
	// which acpterm's then stands in for.
	ConfinedArgs []string
	// ConfinedModes are the agent's session modes that turn its own
	// sandbox off, for agents that take that choice over ACP rather than
	// on their command line: when acpterm confines the agent and --mode
	// names none, the session is switched to the first of them the agent
	// offers (session/set_mode, or its config option of category mode)
	// before the first prompt. A sandbox of the agent's own inside
	// acpterm's fails every command (it cannot set up its namespaces and
	// mounts on a read-only system), and acpterm's holds all it runs.
	ConfinedModes []string
	// LastingEnv are variables pointed, when the agent's writes are
	// confined, at directories of its own that outlive the run (writable,
	// as Dirs are). They are for caches the agent would otherwise keep in
	// its TMPDIR, which the sandbox makes new for every run: each confined
	// run would start cold, and be slower than an unconfined one, whose
	// TMPDIR lasts. The variable's value in acpterm's environment is not
	// followed: a cache the confined agent writes must not be one that
	// unconfined programs read.
	LastingEnv []EnvDir
	// ConfigFiles and ConfigDirs are the files and directories of the
	// agent's state that the agent itself, started later without acpterm's
	// confinement (by an editor, or by the user), runs things from: its
	// settings (hooks, MCP servers, notify commands), plugins, extensions,
	// custom commands, subagents and skills. A confined agent may not write
	// them, unless --writable-config: they are mounted read-only, and
	// ones missing are reserved by the sandbox (directories) or created
	// first, holding their Seed (files: the agent reads them, and would
	// take the sandbox's placeholder, a directory, for a broken config).
	ConfigFiles []PathSpec
	ConfigDirs  []PathSpec
	// Shadows are config files the agent keeps outside its Dirs, that the
	// same agent started unconfined runs things from and that it also
	// rewrites as it goes, so that they can be neither writable nor
	// read-only. Confined (unless --writable-config), the agent works on a
	// copy of its own instead: see Shadow.
	Shadows []Shadow
	// WorkspaceConfig names directories of a workspace that the agent
	// itself writes as it starts, which the workspace's protected names
	// (sandbox.DefaultProtected) otherwise keep read-only, or reserve,
	// as a whole. When acpterm confines the agent, each one of a
	// workspace root is made a real directory when missing, and only its
	// Protect entries are kept read-only (or reserved): the agent writes
	// the rest.
	WorkspaceConfig []WorkspaceConfig
	// ConfigIfPresent are config files protected only where they exist:
	// ones whose mere presence changes what the agent does (an empty
	// ~/.gemini/.env would hide the ~/.env gemini-cli falls back to), so
	// that neither a seed nor a placeholder may stand in for them.
	ConfigIfPresent []PathSpec
}

// A Shadow moves one file of an agent's, for its confined runs, to where
// only confined runs look: Var, a variable the agent reads, is set to Dir
// (one of the profile's Dirs), and the agent then keeps the file as
// Dir/Name. The first confined run finds it there made from the original,
// File (or holding Seed when there is none); later ones find what the
// confined agent left in it, which nothing unconfined reads. The original
// stays as the user and the agent's unconfined runs left it: the sandbox
// does not let a confined agent write the home directory.
//
// Where the agent's environment sets Var already, the agent keeps the file
// under Dir anyway, where a confined run may write it: the shadow cannot
// apply, and Resolve names the file in Resolved.Unprotected.
type Shadow struct {
	Var  string
	Dir  PathSpec
	File PathSpec
	Name string
	Seed string
}

// A WorkspaceConfig is a directory Name of a workspace root and the
// entries of it that stay protected: see Profile.WorkspaceConfig.
type WorkspaceConfig struct {
	Name    string
	Protect []string
}

// EnvDir is a variable of LastingEnv and the directory it is set to.
type EnvDir struct {
	Var string
	Dir PathSpec
}

// PathSpec is one path of a profile: Env when it is set (an absolute path),
// else Base joined with Rel. Under, when set, is joined to the value of
// Env (for variables that name a home, not the agent's own directory).
type PathSpec struct {
	Env   string
	Under string
	Base  Base
	Rel   string
	// Seed is what a missing file is created with; files only.
	Seed string
}

// Base is the directory a PathSpec's Rel is relative to.
type Base int

const (
	Home       Base = iota // $HOME
	ConfigHome             // $XDG_CONFIG_HOME, else ~/.config
	DataHome               // $XDG_DATA_HOME, else ~/.local/share
	StateHome              // $XDG_STATE_HOME, else ~/.local/state
	CacheHome              // $XDG_CACHE_HOME, else ~/.cache
)

func (b Base) String() string {
	switch b {
	case ConfigHome:
		return "$XDG_CONFIG_HOME"
	case DataHome:
		return "$XDG_DATA_HOME"
	case StateHome:
		return "$XDG_STATE_HOME"
	case CacheHome:
		return "$XDG_CACHE_HOME"
	}
	return "~"
}

// dir resolves b in the environment of getenv, or "" when it cannot be.
func (b Base) dir(getenv func(string) string) string {
	home := getenv("HOME")
	xdg := func(v string, rel ...string) string {
		if p := getenv(v); filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		if !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(append([]string{home}, rel...)...)
	}
	switch b {
	case ConfigHome:
		return xdg("XDG_CONFIG_HOME", ".config")
	case DataHome:
		return xdg("XDG_DATA_HOME", ".local", "share")
	case StateHome:
		return xdg("XDG_STATE_HOME", ".local", "state")
	case CacheHome:
		return xdg("XDG_CACHE_HOME", ".cache")
	}
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Clean(home)
}

// resolve is the path s names in the environment of getenv, or "".
func (s PathSpec) resolve(getenv func(string) string) string {
	if s.Env != "" {
		if v := getenv(s.Env); filepath.IsAbs(v) {
			return filepath.Join(v, s.Under)
		}
	}
	base := s.Base.dir(getenv)
	if base == "" {
		return ""
	}
	return filepath.Join(base, s.Rel)
}

// String is how `acpterm agents` shows s.
func (s PathSpec) String() string {
	p := s.Base.String()
	if s.Rel != "" {
		p += "/" + s.Rel
	}
	if s.Env == "" {
		return p
	}
	return "$" + s.Env + pathSuffix(s.Under) + " or " + p
}

func pathSuffix(rel string) string {
	if rel == "" {
		return ""
	}
	return "/" + rel
}

// claudeJSON seeds ~/.claude.json: see the claude profile.
const claudeJSON = "{}\n"

// profiles are the built-in agents' profiles, keyed by the name of the
// program that the agent runs as. Each entry was found by running the
// agent confined with only these paths writable (cmd/acpterm's
// TestRealAgentsScripted), and reading where it failed.
var profiles = map[string]Profile{
	// claude-agent-acp runs Claude Code, which keeps its config directory
	// (CLAUDE_CONFIG_DIR, else ~/.claude) and a global config file that
	// sits in the home directory itself (~/.claude.json; inside
	// CLAUDE_CONFIG_DIR when that is set). Confined, it keeps that file in
	// its config directory (see below), which it writes atomically (a
	// temporary file beside it, then a rename). With --writable-config it
	// writes ~/.claude.json itself: making the home directory writable for
	// the sake of that one file would undo the sandbox (~/.bashrc,
	// ~/.ssh), so the file alone is; the atomic write fails, Claude Code
	// writes the file in place, which a rule for the file allows, and its
	// lock (~/.claude.json.lock) fails the same way and it goes on
	// without. Either file, when missing, is created holding an empty JSON
	// object, which Claude Code reads as a fresh config (an empty file it
	// would take for a corrupted one). Its temporary files
	// go to /tmp/claude-UID unless CLAUDE_CODE_TMPDIR says otherwise: it
	// does not read TMPDIR. As root it refuses to start unless IS_SANDBOX
	// is 1.
	//
	// Of its config directory, settings.json holds hooks (commands run on
	// SessionStart and the like), statusLine and apiKeyHelper commands;
	// plugins/ holds plugins (hooks, MCP servers); commands, agents,
	// skills, workflows and routines what its model runs on a word; hooks/
	// is where hook scripts are kept. ~/.claude.json also lists MCP
	// servers (mcpServers, and per project), which Claude Code started
	// anywhere runs, but it rewrites that file on every start: it cannot
	// be read-only. Confined, Claude Code is given CLAUDE_CONFIG_DIR set
	// to its config directory, and then keeps that file there as
	// .claude.json (its path is $CLAUDE_CONFIG_DIR/.claude.json when the
	// variable is set, else ~/.claude.json): a shadow (Shadow).
	// --writable-config lets it write ~/.claude.json itself instead.
	"claude-agent-acp": {
		Dirs: []PathSpec{{Env: "CLAUDE_CONFIG_DIR", Rel: ".claude"}},
		ConfigFiles: []PathSpec{
			{Env: "CLAUDE_CONFIG_DIR", Under: "settings.json", Rel: ".claude/settings.json", Seed: "{}\n"},
		},
		ConfigDirs: underEach("CLAUDE_CONFIG_DIR", "", ".claude", "commands", "agents", "skills", "workflows", "routines", "plugins", "hooks"),
		Shadows: []Shadow{{
			Var: "CLAUDE_CONFIG_DIR", Dir: PathSpec{Env: "CLAUDE_CONFIG_DIR", Rel: ".claude"},
			File: PathSpec{Rel: ".claude.json"}, Name: ".claude.json", Seed: claudeJSON,
		}},
		TempEnv: []string{"CLAUDE_CODE_TMPDIR"},
		RootEnv: []string{"IS_SANDBOX=1"},
	},
	// codex-acp (@agentclientprotocol/codex-acp 2.6, over codex 0.166)
	// keeps its config, auth, logs, sessions and state databases in
	// CODEX_HOME, else ~/.codex. Its modes read-only, workspace-write and
	// agent (the default) run each command in codex's own bubblewrap
	// sandbox, which inside acpterm's fails every command ("error
	// building bubblewrap command: Read-only file system"); it reads no
	// settings from its command line, so confined by acpterm, whose
	// sandbox holds every command it runs, it is switched to the mode
	// that runs them directly: agent-full-access, or full-access in the
	// @zed-industries/codex-acp releases (0.16), which took
	// `-c sandbox_mode=…` instead and offered read-only, auto and
	// full-access.
	// Its config.toml names the notify program, hooks and MCP servers;
	// hooks.json holds hooks too; rules/ the command prefixes it runs
	// without asking; skills/ and plugins/ what its model runs on a word.
	// codex installs its own system skills in skills/.system at start
	// (imagegen, openai-docs, skill-creator, …, scripts included):
	// confined, that fails ("failed to install system skills: … Read-only
	// file system", on its stderr) and it runs without them, unless an
	// unconfined run installed them before.
	"codex-acp": {
		Dirs: []PathSpec{{Env: "CODEX_HOME", Rel: ".codex"}},
		ConfigFiles: []PathSpec{
			{Env: "CODEX_HOME", Under: "config.toml", Rel: ".codex/config.toml"},
		},
		ConfigIfPresent: []PathSpec{{Env: "CODEX_HOME", Under: "hooks.json", Rel: ".codex/hooks.json"}},
		ConfigDirs:      underEach("CODEX_HOME", "", ".codex", "rules", "skills", "plugins"),
		ConfinedModes:   []string{"agent-full-access", "full-access"},
	},
	// gemini-cli writes ~/.gemini (settings, history, tmp); GEMINI_CLI_HOME
	// stands in for the home directory. Its shell tool runs in a pty.
	// Its settings.json names MCP servers, hooks and tool discovery
	// commands; trustedFolders.json lets a project's .gemini/settings.json
	// apply; .env is loaded into its environment; extensions (MCP servers,
	// hooks), commands (with shell injection), skills, agents and
	// policies (rules that allow tools).
	"gemini": {Dirs: []PathSpec{{Env: "GEMINI_CLI_HOME", Under: ".gemini", Rel: ".gemini"}}, PTY: true,
		ConfigFiles: []PathSpec{
			{Env: "GEMINI_CLI_HOME", Under: ".gemini/settings.json", Rel: ".gemini/settings.json", Seed: "{}\n"},
			{Env: "GEMINI_CLI_HOME", Under: ".gemini/trustedFolders.json", Rel: ".gemini/trustedFolders.json", Seed: "{}\n"},
		},
		ConfigIfPresent: []PathSpec{{Env: "GEMINI_CLI_HOME", Under: ".gemini/.env", Rel: ".gemini/.env"}},
		ConfigDirs:      underEach("GEMINI_CLI_HOME", ".gemini", ".gemini", "extensions", "commands", "skills", "agents", "policies")},
	// opencode follows XDG: its data (a SQLite database, logs), state,
	// cache and config directories.
	// Of its config directory, opencode.json(c) names MCP servers and
	// plugins; plugin(s)/ and tool(s)/ hold JavaScript it imports;
	// command(s), agent(s), mode(s), skill(s) what its model runs.
	"opencode": {Dirs: []PathSpec{
		{Base: DataHome, Rel: "opencode"},
		{Base: StateHome, Rel: "opencode"},
		{Base: CacheHome, Rel: "opencode"},
		{Base: ConfigHome, Rel: "opencode"},
	},
		ConfigFiles: []PathSpec{
			{Base: ConfigHome, Rel: "opencode/opencode.json", Seed: "{}\n"},
			{Base: ConfigHome, Rel: "opencode/opencode.jsonc", Seed: "{}\n"},
			{Base: ConfigHome, Rel: "opencode/config.json", Seed: "{}\n"},
		},
		ConfigDirs: inBase(ConfigHome, "opencode", "plugin", "plugins", "tool", "tools", "command", "commands",
			"agent", "agents", "mode", "modes", "skill", "skills"),
		// A workspace's .opencode holds the same kinds of things, and
		// opencode writes a .gitignore into it at every start where it
		// exists (a read-only one, or the sandbox's placeholder, fails
		// the start with EROFS).
		WorkspaceConfig: []WorkspaceConfig{{Name: ".opencode", Protect: []string{
			"opencode.json", "opencode.jsonc", "config.json", "package.json", "node_modules",
			// What an install there follows: a lock file can name any
			// tarball for a dependency package.json lists, bunfig.toml
			// and .npmrc the registry.
			"bun.lock", "bun.lockb", "package-lock.json", "bunfig.toml", ".npmrc",
			"plugin", "plugins", "tool", "tools", "command", "commands",
			"agent", "agents", "mode", "modes", "skill", "skills",
		}}}},
	// qwen-code writes ~/.qwen (settings, chats, tmp), or QWEN_HOME.
	// Its shell tool runs in a pty, as gemini-cli's does.
	// As gemini-cli's, which it derives from: settings.json (MCP
	// servers, hooks, tool discovery commands), .env, extensions,
	// commands, agents, skills.
	"qwen": {Dirs: []PathSpec{{Env: "QWEN_HOME", Rel: ".qwen"}}, PTY: true,
		LastingEnv: []EnvDir{nodeCompileCache("qwen")},
		ConfigFiles: []PathSpec{
			{Env: "QWEN_HOME", Under: "settings.json", Rel: ".qwen/settings.json", Seed: "{}\n"},
		},
		ConfigIfPresent: []PathSpec{{Env: "QWEN_HOME", Under: ".env", Rel: ".qwen/.env"}},
		ConfigDirs:      underEach("QWEN_HOME", "", ".qwen", "extensions", "commands", "agents", "skills")},
	// omp keeps a SQLite database and its sessions in ~/.omp.
	// Its agent directory's extensions/ (TypeScript it loads), hooks/ and
	// skills/, as pi's.
	"omp": {Dirs: []PathSpec{{Rel: ".omp"}},
		ConfigDirs: underEach("", "", ".omp/agent", "extensions", "hooks", "skills")},
	// pi-acp runs pi, which keeps its settings and sessions in ~/.pi
	// (PI_CODING_AGENT_DIR for its agent directory). pi's entry point
	// turns on node's compile cache, which lives in NODE_COMPILE_CACHE,
	// else in TMPDIR/node-compile-cache: in a fresh TMPDIR every confined
	// run compiled pi's 10 MB bundle again, in pi's RPC process and in
	// the `pi --version` pi-acp runs before the session starts: 0.2 s of
	// a 1.2 s turn, the whole of what confining pi cost. Its cache is kept
	// apart from the one of unconfined runs, which the confined agent
	// must not write.
	//
	// pi's settings.json lists packages and extensions it loads;
	// extensions/ holds TypeScript it runs; skills/ what its model runs.
	"pi-acp": {Dirs: []PathSpec{{Rel: ".pi"}, {Env: "PI_CODING_AGENT_DIR", Rel: ".pi/agent"}},
		LastingEnv:  []EnvDir{nodeCompileCache("pi-acp")},
		ConfigFiles: []PathSpec{{Env: "PI_CODING_AGENT_DIR", Under: "settings.json", Rel: ".pi/agent/settings.json", Seed: "{}\n"}},
		ConfigDirs:  underEach("PI_CODING_AGENT_DIR", "", ".pi/agent", "extensions", "skills")},
}

// underEach is a PathSpec for each of names in a state directory that is
// env/under when the variable env is set ("" for none), else ~/rel.
func underEach(env, under, rel string, names ...string) []PathSpec {
	out := make([]PathSpec, 0, len(names))
	for _, n := range names {
		u := n
		if under != "" {
			u = under + "/" + n
		}
		out = append(out, PathSpec{Env: env, Under: u, Rel: rel + "/" + n})
	}
	return out
}

// inBase is a PathSpec for each of names in dir of base.
func inBase(base Base, dir string, names ...string) []PathSpec {
	out := make([]PathSpec, 0, len(names))
	for _, n := range names {
		out = append(out, PathSpec{Base: base, Rel: dir + "/" + n})
	}
	return out
}

// nodeCompileCache is the LastingEnv entry of a node agent that turns on
// node's compile cache (module.enableCompileCache): one directory per
// agent, so that agents confined apart (read-only mode makes only their
// profiles' paths writable) do not share compiled code.
func nodeCompileCache(agent string) EnvDir {
	return EnvDir{Var: "NODE_COMPILE_CACHE", Dir: PathSpec{Base: CacheHome, Rel: "acpterm/node-compile-cache/" + agent}}
}

// ProfileFor returns the profile of the program command[0] (by base name)
// or, for `npx [-y] PACKAGE`, of the package the registry names it by; ok
// is false for a command with no profile.
func (r *Registry) ProfileFor(command []string) (Profile, bool) {
	if len(command) == 0 {
		return Profile{}, false
	}
	prog := filepath.Base(command[0])
	if prog == "npx" {
		pkg := NpxPackage(command[1:])
		for _, a := range builtin {
			if a.Package != "" && a.Package == pkg || slices.Contains(a.FormerPackages, pkg) {
				p, ok := profiles[a.Command[0]]
				p.Npx = true
				return p, ok
			}
		}
		return Profile{}, false
	}
	p, ok := profiles[prog]
	return p, ok
}

// NpxPackage is the package of npx's arguments: the first one that is not
// an option, without a version.
func NpxPackage(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if at := strings.LastIndexByte(a, '@'); at > 0 {
			a = a[:at]
		}
		return a
	}
	return ""
}

// Resolved is a profile, with an agent's own writable paths, worked out
// for one environment: absolute paths, ready for the sandbox.
type Resolved struct {
	// Dirs and Files are absolute and clean.
	Dirs, Files []string
	// Seeds maps a file of Files to what it is created with when missing.
	Seeds map[string]string
	// Env is what LastingEnv sets, as VAR=PATH, each PATH one of Dirs.
	Env []string
	// CacheHome is the cache directory ($XDG_CACHE_HOME, else ~/.cache)
	// that Dirs of the profile's are placed in, when one is; "" when
	// none is. A confined agent's sandbox points XDG_CACHE_HOME at the
	// commands' own caches (sandbox.Policy.CacheDir), which every
	// sandboxed command writes; the agent is given this one back, so
	// that it keeps its state where its profile says, which only it
	// writes.
	CacheHome string
	// Config is the agent's ConfigFiles and ConfigDirs, absolute, for
	// sandbox.Policy.Protected; ConfigSeeds maps those of them that are
	// files to what Prepare creates them with when missing.
	Config      []string
	ConfigSeeds map[string]string
	// Shadows are the profile's shadows that apply here; Unprotected says
	// which files of the others a confined run may write (see Shadow).
	Shadows     []ResolvedShadow
	Unprotected []string
	// TempEnv, RootEnv, ConfinedArgs, ConfinedModes and NotByDefault as
	// in Profile.
	TempEnv       []string
	RootEnv       []string
	ConfinedArgs  []string
	ConfinedModes []string
	NotByDefault  string
	// WorkspaceConfig as in Profile.
	WorkspaceConfig []WorkspaceConfig
}

// Resolve works p out in the environment of getenv, with extra (an
// agents.json entry's own writable paths, already absolute) added as
// directories or files, whichever they are ("" entries are skipped). A
// path that cannot be resolved (no HOME) is an error.
func (p Profile) Resolve(getenv func(string) string, extra []string) (*Resolved, error) {
	r := &Resolved{Seeds: map[string]string{}, ConfigSeeds: map[string]string{}, TempEnv: slices.Clone(p.TempEnv), RootEnv: slices.Clone(p.RootEnv),
		ConfinedArgs: slices.Clone(p.ConfinedArgs), ConfinedModes: slices.Clone(p.ConfinedModes), NotByDefault: p.NotByDefault, WorkspaceConfig: slices.Clone(p.WorkspaceConfig)}
	for _, d := range p.Dirs {
		path := d.resolve(getenv)
		if path == "" {
			return nil, fmt.Errorf("cannot place %s: HOME is not an absolute path", d)
		}
		if d.Base == CacheHome && (d.Env == "" || getenv(d.Env) == "") {
			r.CacheHome = CacheHome.dir(getenv)
		}
		if !slices.Contains(r.Dirs, path) {
			r.Dirs = append(r.Dirs, path)
		}
	}
	for _, e := range p.LastingEnv {
		path := e.Dir.resolve(getenv)
		if path == "" {
			return nil, fmt.Errorf("cannot place %s: HOME is not an absolute path", e.Dir)
		}
		if !slices.Contains(r.Dirs, path) {
			r.Dirs = append(r.Dirs, path)
		}
		r.Env = append(r.Env, e.Var+"="+path)
	}
	for _, f := range p.Files {
		path := f.resolve(getenv)
		if path == "" {
			return nil, fmt.Errorf("cannot place %s: HOME is not an absolute path", f)
		}
		r.Files = append(r.Files, path)
		r.Seeds[path] = f.Seed
	}
	for _, f := range p.ConfigFiles {
		if path := f.resolve(getenv); path != "" {
			r.Config = append(r.Config, path)
			r.ConfigSeeds[path] = f.Seed
		}
	}
	for _, d := range p.ConfigDirs {
		if path := d.resolve(getenv); path != "" {
			r.Config = append(r.Config, path)
		}
	}
	for _, f := range p.ConfigIfPresent {
		if path := f.resolve(getenv); path != "" {
			if _, err := os.Lstat(path); err == nil {
				r.Config = append(r.Config, path)
			}
		}
	}
	for _, sh := range p.Shadows {
		dir, file := sh.Dir.resolve(getenv), sh.File.resolve(getenv)
		if dir == "" || file == "" {
			return nil, fmt.Errorf("cannot place %s: HOME is not an absolute path", sh.File)
		}
		if v := getenv(sh.Var); v != "" {
			r.Unprotected = append(r.Unprotected, fmt.Sprintf("%s: with %s set, the agent keeps it in the directory it writes, and its unconfined runs trust what a confined one wrote there", filepath.Join(dir, sh.Name), sh.Var))
			continue
		}
		r.Shadows = append(r.Shadows, ResolvedShadow{Var: sh.Var, Dir: dir, File: file, Path: filepath.Join(dir, sh.Name), Seed: sh.Seed})
	}
	for _, e := range extra {
		if e == "" {
			continue
		}
		fi, err := os.Stat(e)
		if err == nil && !fi.IsDir() {
			r.Files = append(r.Files, e)
			continue
		}
		r.Dirs = append(r.Dirs, e)
	}
	return r, nil
}

// Prepare creates what r names and is missing, since a sandbox rule needs
// an existing path: directories (with their parents) mode 0700, files with
// their seed, mode 0600. An existing path of the wrong kind is an error.
//
// Each is made a real directory or file before the first sandbox, and no
// symlink is followed where a sandboxed command could have made one (in
// the home directory, the temporary directory): a confined run could
// otherwise point ~/.cache/opencode at the home directory, and the next
// make the home directory writable. Such a link is an error naming it
// (sandbox.LinkError); links in system directories are followed.
func (r *Resolved) Prepare() error {
	for _, d := range r.Dirs {
		if _, err := sandbox.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating the agent's directory: %w", err)
		}
	}
	for _, f := range r.Files {
		if err := prepareFile(f, r.Seeds[f]); err != nil {
			return err
		}
	}
	return nil
}

// prepareFile creates the file f with seed unless it exists, without
// following a symlink in its place.
func prepareFile(f, seed string) error {
	dir, err := sandbox.MkdirAll(filepath.Dir(f), 0o700)
	if err != nil {
		return fmt.Errorf("creating the agent's file: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(f))
	// O_EXCL: an existing file is the agent's, and left as it is; a link
	// in its place counts as existing, and is not written through.
	h, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		fi, err := os.Lstat(path)
		if err != nil {
			return fmt.Errorf("the agent's file: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, err := sandbox.ResolvePath(path); err != nil {
				return fmt.Errorf("the agent's file: %w", err)
			}
			fi, err = os.Stat(path)
			if err != nil {
				return fmt.Errorf("the agent's file: %w", err)
			}
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("the agent's file %s is not a regular file", f)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the agent's file: %w", err)
	}
	_, werr := h.WriteString(seed)
	if err := errors.Join(werr, h.Close()); err != nil {
		return fmt.Errorf("creating the agent's file: %w", err)
	}
	return nil
}

// ResolvedShadow is a Shadow worked out: Path is Dir/Name.
type ResolvedShadow struct {
	Var, Dir, File, Path, Seed string
}

// ShadowEnv is what the agent's environment gets for its shadows when
// PrepareShadows made them: each Var=Dir.
func (r *Resolved) ShadowEnv() []string {
	var env []string
	for _, sh := range r.Shadows {
		env = append(env, sh.Var+"="+sh.Dir)
	}
	return env
}

// Unshadowed is what stands instead of the shadows where they are not used
// (--writable-config): the original files, writable, as Files are.
func (r *Resolved) Unshadowed() error {
	for _, sh := range r.Shadows {
		if err := prepareFile(sh.File, sh.Seed); err != nil {
			return err
		}
		if !slices.Contains(r.Files, sh.File) {
			r.Files = append(r.Files, sh.File)
		}
	}
	return nil
}

// PrepareShadows makes each shadow's copy that is missing, mode 0600: the
// original file's content, or the seed when there is none. A copy that
// exists is the confined agent's, and is left as it is. Prepare must have
// made the directories.
//
// Nothing is written through a link: the copy is made under a temporary
// name (O_EXCL) in its directory, which the confined agent cannot replace
// (its parent is not writable to it), and linked into place only where
// the name is free: a link there, which a confined run may have left,
// counts as the copy, and nothing is written through it. The original is read as the user's
// own file: following a link (dotfiles often are), a regular file only.
func (r *Resolved) PrepareShadows() error {
	for _, sh := range r.Shadows {
		if err := prepareShadow(sh); err != nil {
			return fmt.Errorf("making the agent's copy of %s: %w", sh.File, err)
		}
	}
	return nil
}

func prepareShadow(sh ResolvedShadow) error {
	if _, err := os.Lstat(sh.Path); err == nil {
		return nil
	}
	content := []byte(sh.Seed)
	if b, err := readRegular(sh.File); err == nil {
		content = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(sh.Path), "."+filepath.Base(sh.Path)+".acpterm-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(content)
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// A hard link, as a rename that replaces nothing: where something
	// appeared meanwhile, it is the agent's and stays.
	err = os.Link(tmp.Name(), sh.Path)
	if errors.Is(err, fs.ErrExist) {
		err = nil
	}
	return errors.Join(err, os.Remove(tmp.Name()))
}

// readRegular reads the regular file at path, following links; a FIFO or
// a device there is an error, not a read that blocks or has effects.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.ReadFile(path)
}

// PrepareConfig creates the agent's config files that are missing, mode
// 0600, holding their seed, so that the sandbox can keep them read-only
// (see Profile.ConfigFiles); it leaves the directories to the sandbox.
func (r *Resolved) PrepareConfig() error {
	for path, seed := range r.ConfigSeeds {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("creating the agent's config file: %w", err)
		}
		h, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating the agent's config file: %w", err)
		}
		_, werr := h.WriteString(seed)
		if err := errors.Join(werr, h.Close()); err != nil {
			return fmt.Errorf("creating the agent's config file: %w", err)
		}
	}
	return nil
}

// Paths are Dirs, then Files.
func (r *Resolved) Paths() []string {
	return append(slices.Clone(r.Dirs), r.Files...)
}

// Describe is a one-line summary of p for `acpterm agents`.
func (p Profile) Describe() string {
	var parts []string
	for _, d := range p.Dirs {
		parts = append(parts, d.String()+"/")
	}
	for _, f := range p.Files {
		parts = append(parts, f.String())
	}
	if p.Npx {
		parts = append(parts, "an npm cache of acpterm's own for it (npx)")
	}
	for _, e := range p.LastingEnv {
		parts = append(parts, e.Var+" at "+e.Dir.String()+"/ (kept across runs)")
	}
	if len(p.TempEnv) > 0 {
		parts = append(parts, "TMPDIR, "+strings.Join(p.TempEnv, ", ")+" private")
	} else {
		parts = append(parts, "TMPDIR private")
	}
	if p.PTY {
		parts = append(parts, "its commands on a pty of the sandbox's own")
	}
	if len(p.ConfinedArgs) > 0 {
		parts = append(parts, "confined with "+strings.Join(p.ConfinedArgs, " "))
	}
	if len(p.ConfinedModes) > 0 {
		parts = append(parts, "confined in mode "+strings.Join(p.ConfinedModes, " or ")+" (its own sandbox off) unless --mode")
	}
	for _, e := range p.RootEnv {
		parts = append(parts, e+" as root")
	}
	for _, sh := range p.Shadows {
		parts = append(parts, fmt.Sprintf("%s as %s%s (%s set), made from it on the first confined run", sh.File, sh.Dir, pathSuffix(sh.Name), sh.Var))
	}
	if n := len(p.ConfigFiles) + len(p.ConfigDirs) + len(p.ConfigIfPresent); n > 0 {
		var names []string
		for _, c := range slices.Concat(p.ConfigFiles, p.ConfigDirs, p.ConfigIfPresent) {
			names = append(names, filepath.Base(c.Rel))
		}
		parts = append(parts, "read-only unless --writable-config: "+strings.Join(names, ", "))
	}
	if p.NotByDefault != "" {
		parts = append(parts, "not confined unless --sandbox-agent: "+p.NotByDefault)
	}
	return strings.Join(parts, "; ")
}
