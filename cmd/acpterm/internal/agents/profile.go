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
	// LastingEnv are variables pointed, when the agent's writes are
	// confined, at directories of its own that outlive the run (writable,
	// as Dirs are). They are for caches the agent would otherwise keep in
	// its TMPDIR, which the sandbox makes new for every run: each confined
	// run would start cold, and be slower than an unconfined one, whose
	// TMPDIR lasts. The variable's value in acpterm's environment is not
	// followed: a cache the confined agent writes must not be one that
	// unconfined programs read.
	LastingEnv []EnvDir
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
	// CLAUDE_CONFIG_DIR when that is set). Making the home directory
	// writable for the sake of that one file would undo the sandbox
	// (~/.bashrc, ~/.ssh), so the file alone is writable. Claude Code
	// writes it atomically (a temporary file beside it, then a rename),
	// which needs the home directory; when that fails it writes the file
	// in place, which a rule for the file allows; its lock
	// (~/.claude.json.lock) fails the same way and it goes on without. A
	// rule needs an existing file, so a missing one is created holding an
	// empty JSON object, which Claude Code reads as a fresh config (an
	// empty file it would take for a corrupted one). Its temporary files
	// go to /tmp/claude-UID unless CLAUDE_CODE_TMPDIR says otherwise: it
	// does not read TMPDIR. As root it refuses to start unless IS_SANDBOX
	// is 1.
	"claude-agent-acp": {
		Dirs:    []PathSpec{{Env: "CLAUDE_CONFIG_DIR", Rel: ".claude"}},
		Files:   []PathSpec{{Env: "CLAUDE_CONFIG_DIR", Under: ".claude.json", Rel: ".claude.json", Seed: claudeJSON}},
		TempEnv: []string{"CLAUDE_CODE_TMPDIR"},
		RootEnv: []string{"IS_SANDBOX=1"},
	},
	// codex keeps its config, auth, logs and session database in
	// CODEX_HOME, else ~/.codex. Its own modes run each command in
	// bubblewrap, which nests a user namespace in acpterm's sandbox and,
	// where bwrap is missing, crashes every command (exit 101); confined by
	// acpterm, whose sandbox holds every command it runs, it is told to
	// run them directly.
	"codex-acp": {
		Dirs:         []PathSpec{{Env: "CODEX_HOME", Rel: ".codex"}},
		ConfinedArgs: []string{"-c", `sandbox_mode="danger-full-access"`},
	},
	// gemini-cli writes ~/.gemini (settings, history, tmp); GEMINI_CLI_HOME
	// stands in for the home directory. Its shell tool runs in a pty.
	"gemini": {Dirs: []PathSpec{{Env: "GEMINI_CLI_HOME", Under: ".gemini", Rel: ".gemini"}}, PTY: true},
	// opencode follows XDG: its data (a SQLite database, logs), state,
	// cache and config directories.
	"opencode": {Dirs: []PathSpec{
		{Base: DataHome, Rel: "opencode"},
		{Base: StateHome, Rel: "opencode"},
		{Base: CacheHome, Rel: "opencode"},
		{Base: ConfigHome, Rel: "opencode"},
	}},
	// qwen-code writes ~/.qwen (settings, chats, tmp), or QWEN_HOME.
	// Its shell tool runs in a pty, as gemini-cli's does.
	"qwen": {Dirs: []PathSpec{{Env: "QWEN_HOME", Rel: ".qwen"}}, PTY: true,
		LastingEnv: []EnvDir{nodeCompileCache("qwen")}},
	// omp keeps a SQLite database and its sessions in ~/.omp.
	"omp": {Dirs: []PathSpec{{Rel: ".omp"}}},
	// pi-acp runs pi, which keeps its settings and sessions in ~/.pi
	// (PI_CODING_AGENT_DIR for its agent directory). pi's entry point
	// turns on node's compile cache, which lives in NODE_COMPILE_CACHE,
	// else in TMPDIR/node-compile-cache: in a fresh TMPDIR every confined
	// run compiled pi's 10 MB bundle again, in pi's RPC process and in
	// the `pi --version` pi-acp runs before the session starts: 0.2 s of
	// a 1.2 s turn, the whole of what confining pi cost. Its cache is kept
	// apart from the one of unconfined runs, which the confined agent
	// must not write.
	"pi-acp": {Dirs: []PathSpec{{Rel: ".pi"}, {Env: "PI_CODING_AGENT_DIR", Rel: ".pi/agent"}},
		LastingEnv: []EnvDir{nodeCompileCache("pi-acp")}},
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
			if a.Package != "" && a.Package == pkg {
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
	// TempEnv, RootEnv, ConfinedArgs and NotByDefault as in Profile.
	TempEnv      []string
	RootEnv      []string
	ConfinedArgs []string
	NotByDefault string
}

// Resolve works p out in the environment of getenv, with extra (an
// agents.json entry's own writable paths, already absolute) added as
// directories or files, whichever they are ("" entries are skipped). A
// path that cannot be resolved (no HOME) is an error.
func (p Profile) Resolve(getenv func(string) string, extra []string) (*Resolved, error) {
	r := &Resolved{Seeds: map[string]string{}, TempEnv: slices.Clone(p.TempEnv), RootEnv: slices.Clone(p.RootEnv),
		ConfinedArgs: slices.Clone(p.ConfinedArgs), NotByDefault: p.NotByDefault}
	for _, d := range p.Dirs {
		path := d.resolve(getenv)
		if path == "" {
			return nil, fmt.Errorf("cannot place %s: HOME is not an absolute path", d)
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
	for _, e := range p.RootEnv {
		parts = append(parts, e+" as root")
	}
	if p.NotByDefault != "" {
		parts = append(parts, "not confined unless --sandbox-agent: "+p.NotByDefault)
	}
	return strings.Join(parts, "; ")
}
