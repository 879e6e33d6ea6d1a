package agents

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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
	// the agent (see cmd/acpterm/internal/agentstart's Start).
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
	// Credentials are the files in which the agent keeps its login
	// (credentials.go): confined, it reads them and no other agent's.
	Credentials []PathSpec
	// MCPEnv is set in the agent's environment, confined or not, when
	// the run offers it acpterm's MCP server (acpterm run --mcp): for
	// an agent that would otherwise connect its MCP servers in the
	// background and could send its first model request without the
	// offered tools.
	MCPEnv []string
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

const (
	Home       Base = iota // $HOME
	ConfigHome             // $XDG_CONFIG_HOME, else ~/.config
	DataHome               // $XDG_DATA_HOME, else ~/.local/share
	StateHome              // $XDG_STATE_HOME, else ~/.local/state
	CacheHome              // $XDG_CACHE_HOME, else ~/.cache
)

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
	// Over ACP (0.24.4) it connects the MCP servers of session/new in
	// the background and does not wait for them before a prompt, so a
	// first turn may go to the model without acpterm's tool;
	// QWEN_CODE_LEGACY_MCP_BLOCKING=1 has session/new connect them first.
	"qwen": {Dirs: []PathSpec{{Env: "QWEN_HOME", Rel: ".qwen"}}, PTY: true,
		MCPEnv:     []string{"QWEN_CODE_LEGACY_MCP_BLOCKING=1"},
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
	key, npx := profileKey(command)
	p, ok := profiles[key]
	p.Npx = npx
	return p, ok
}

// profileKey is the program command runs, by which profiles are keyed:
// its base name, or for `npx [-y] PACKAGE` the program of the built-in
// agent the package provides (npx true); "" when there is none.
func profileKey(command []string) (key string, npx bool) {
	if len(command) == 0 {
		return "", false
	}
	prog := filepath.Base(command[0])
	if prog != "npx" {
		return prog, false
	}
	pkg := NpxPackage(command[1:])
	for _, a := range builtin {
		if a.Package != "" && a.Package == pkg || slices.Contains(a.FormerPackages, pkg) {
			return a.Command[0], true
		}
	}
	return "", false
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
	for _, e := range p.MCPEnv {
		parts = append(parts, e+" with --mcp")
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
