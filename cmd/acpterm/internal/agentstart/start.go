package agentstart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
)

// Start is how acpterm starts an agent, the one way run, sessions,
// login and the exec server's --agent all take: where it starts, npx in a
// directory of acpterm's own with an npm cache of acpterm's own, its
// profile and its confinement.
//
// The rule it keeps: nothing a confined run can write is later executed
// by anything unconfined. npx runs what it finds in its cache
// (_npx/HASH/node_modules) without checking it again, and a confined agent
// started through npx must be able to write that cache (npx 11 fails on
// a read-only one: every start takes a lock in _npx/HASH and stores the
// registry's answer in _cacache).
// So the cache an agent is started from is never one a command can write
// (it lies in acpterm's state directory), and each confined agent gets a
// cache of its own that only it writes and only it, confined, runs from;
// unconfined agents share another one that nothing confined writes.
type Start struct {
	// Agent is the agent's command line.
	Agent []string
	// Dir is where the agent starts ("" for the current directory),
	// unless it starts through npx.
	Dir string
	// Profile is what the agent writes (nil: none known).
	Profile *agents.Resolved
	// Confine runs the agent, and all it starts, in Policy's sandbox with
	// its profile's paths writable too.
	Confine bool
	// Policy is the sandbox the agent's writable paths are added to: the
	// run's commands' own, or nil for the agent's state alone (read-only
	// mode, which agentPolicy turns into the profile's paths). Its
	// Writable paths, Caches and CacheDir are also those a command of the
	// run may write, which npx's directory and cache must not be among.
	Policy *sandbox.Policy
	// MaskKeys gives a confined agent sentinels in place of its API keys
	// and a base URL that leads to acpterm, which puts the keys back
	// toward the agent's API host alone (KeyMask).
	MaskKeys bool

	// MCPAddr is the loopback address of the MCP server the run offers
	// ("" for none; with one, the agent's environment gets its
	// profile's MCPEnv): under ProxyNetwork, whose seccomp filter refuses unix
	// sockets, Command adds it to the agent's list, which forwards it
	// into the agent's namespace, and sets MCPViaTCP; the offer then gives
	// the agent that address.
	MCPAddr string
	// MCPViaTCP: see MCPAddr. MCPUnreachable: the agent's network is
	// denied, and no relay could reach the offer.
	MCPViaTCP, MCPUnreachable bool

	// Mask is set by Command when MaskKeys found a key variable or a
	// login file of the agent's: what was masked, and the endpoint the
	// caller closes when the agent has ended (nil otherwise).
	Mask *KeyMask
}

// Command returns the agent's process, not started, and the sandbox it
// runs in (nil when it is not confined; the caller cleans it up).
func (s *Start) Command() (*exec.Cmd, *sandbox.Applied, error) {
	if len(s.Agent) == 0 || s.Agent[0] == "" {
		return nil, nil, fmt.Errorf("no agent command given")
	}
	p := s.Policy
	if p == nil {
		p = &sandbox.Policy{Mode: sandbox.ReadOnly, WithoutMountNamespace: true}
		Secrets(nil, false).Apply(p)
	}
	args := s.Agent[1:]
	if s.Confine && s.Profile != nil && p.Mode != sandbox.Off {
		args = append(slices.Clone(args), s.Profile.ConfinedArgs...)
	}
	cmd := exec.Command(s.Agent[0], args...)
	cmd.Dir = s.Dir
	var cache string
	if IsNpx(s.Agent) {
		var err error
		if cache, err = s.useNpx(cmd, p); err != nil {
			return nil, nil, err
		}
	}
	if s.MCPAddr != "" && s.Profile != nil && len(s.Profile.MCPEnv) > 0 {
		cmd.Env = append(cmd.Environ(), s.Profile.MCPEnv...)
	}
	if !s.Confine {
		return cmd, nil, nil
	}
	ap, err := agentPolicy(p, s.Profile, cache, s.workDir())
	if err != nil {
		return nil, nil, fmt.Errorf("cannot sandbox the agent: %v (--sandbox-agent=false runs it unconfined)", err)
	}
	if err := s.maskKeys(ap); err != nil {
		return nil, nil, fmt.Errorf("cannot mask the agent's keys: %v (--mask-keys=false passes them as they are)", err)
	}
	s.reachMCP(ap)
	// Wrap keeps SysProcAttr, and the caller may add to it: the process
	// group, the cgroup and Pdeathsig apply to the helper, which becomes
	// the agent.
	a, err := ap.Wrap(cmd)
	if err != nil {
		s.Mask.Close()
		s.Mask = nil
		return nil, nil, fmt.Errorf("cannot sandbox the agent: %v (--sandbox-agent=false runs it unconfined)", err)
	}
	if cache != "" {
		// Wrap pointed npm_config_cache at the run's commands' own
		// cache (Policy.CacheDir), which every sandboxed command writes;
		// npx runs the agent from the agent's own (the last entry wins).
		cmd.Env = append(cmd.Env, "npm_config_cache="+cache)
	}
	agentEnv(cmd, a, s.Profile, !ap.WritableConfig)
	cmd.Env = s.Mask.apply(cmd.Env)
	if sock := os.Getenv(SSHAuthSock); sock != "" && slices.Contains(ap.Hidden, sock) {
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, SSHAuthSock+"=") })
	}
	if s.Profile != nil && !ap.WritableConfig {
		// Said where the sandbox's own gaps are: the first line.
		for _, u := range s.Profile.Unprotected {
			a.Missing = append(a.Missing, "cannot protect "+u)
		}
	}
	return cmd, a, nil
}

// useNpx has cmd, an npx command line, start in a directory of acpterm's
// own outside what the commands may write (those of p, the run's policy),
// with an npm cache that only this agent (confined) or only unconfined
// agents write, and returns that cache.
func (s *Start) useNpx(cmd *exec.Cmd, p *sandbox.Policy) (string, error) {
	// Commands of this run write its Writable paths, Caches and
	// CacheDir; without a policy (sessions, login) those a run in Dir
	// would make writable: Dir and the default CacheDir.
	writable := append(slices.Clone(p.Writable), p.Caches...)
	if p.CacheDir != "" {
		writable = append(writable, p.CacheDir)
	}
	if s.Policy == nil {
		dir := s.Dir
		if dir == "" {
			var err error
			if dir, err = os.Getwd(); err != nil {
				return "", fmt.Errorf("cannot get the current directory: %v", err)
			}
		}
		writable = []string{dir}
		if d := sandbox.DefaultCacheDir(); d != "" {
			writable = append(writable, d)
		}
	}
	dir, err := npxDir(writable)
	if err != nil {
		return "", fmt.Errorf("cannot make a directory for npx outside the workspace: %v", err)
	}
	cmd.Dir = dir
	cache, err := npmCacheDir(npmCacheKey(s.Agent, s.Confine), writable)
	if err != nil {
		return "", fmt.Errorf("cannot make an npm cache for npx: %v", err)
	}
	cmd.Env = append(cmd.Environ(), "npm_config_cache="+cache)
	return cache, nil
}

// maskKeys starts the key mask of a confined agent (MaskKeys), and under
// ProxyNetwork adds its endpoint to the agent's list, which forwards it
// into the agent's namespace.
func (s *Start) maskKeys(ap *sandbox.Policy) error {
	if !s.MaskKeys || ap.Mode == sandbox.Off {
		return nil
	}
	var creds []string
	if s.Profile != nil {
		creds = s.Profile.Credentials
	}
	km, err := newKeyMask(s.Agent, os.Getenv, ap.Network, creds)
	if err != nil {
		return err
	}
	if h := km.allowHost(); h != "" && ap.Network == sandbox.ProxyNetwork {
		ap.AllowHosts = append(slices.Clone(ap.AllowHosts), h)
	}
	s.Mask = km
	return nil
}

// reachMCP lets a confined agent reach the offered MCP server (MCPAddr)
// where its sandbox refuses unix sockets.
func (s *Start) reachMCP(ap *sandbox.Policy) {
	if s.MCPAddr == "" {
		return
	}
	switch ap.Network {
	case sandbox.ProxyNetwork:
		ap.AllowHosts = append(slices.Clone(ap.AllowHosts), s.MCPAddr)
		s.MCPViaTCP = true
	case sandbox.DenyNetwork:
		s.MCPUnreachable = true
	}
}

// MissingLine is what sessions and login say, one line, when the agent's
// sandbox lacks a protection this machine cannot give ("" when none is
// missing): run says it on its first line (confinementLine).
func MissingLine(a *sandbox.Applied) string {
	if a == nil || len(a.Missing) == 0 {
		return ""
	}
	return "acpterm: sandbox: the agent is confined to its own state, missing: " + textsafe.Line(strings.Join(a.Missing, "; "))
}

// npmCacheKey names the npm cache an agent started through npx uses: a
// confined agent one of its package's own, an unconfined one the cache of
// unconfined agents.
func npmCacheKey(agent []string, confined bool) string {
	if !confined {
		return "unconfined"
	}
	pkg := agents.NpxPackage(agent[1:])
	// npm names hold lower-case letters, digits and -._~ besides the
	// scope's @ and /; anything else would be a name npm refuses.
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-._~@", r):
			return r
		}
		return '+'
	}, pkg)
	if clean == "" || clean == "." || clean == ".." {
		clean = "+"
	}
	return "confined-" + clean
}

// npmCacheDir returns the npm cache called key: in acpterm's state
// directory's "npm", unless a sandboxed command could write there (see
// npxDir); then in acpterm-npm-UID in the system's temporary directory.
// Each directory on the way is made 0700 and must be this user's own and
// not a symlink.
func npmCacheDir(key string, writable []string) (string, error) {
	if base, err := sessionstore.StateDir(); err == nil {
		dir := filepath.Join(base, "npm", key)
		if !Under(dir, writable) {
			if err := makeOwnDir(filepath.Join(base, "npm")); err == nil {
				if err := makeOwnDir(dir); err == nil {
					return dir, nil
				}
			}
		}
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("acpterm-npm-%d", os.Geteuid()))
	if err := makeOwnDir(base); err != nil {
		return "", err
	}
	dir := filepath.Join(base, key)
	if err := makeOwnDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// makeOwnDir makes dir 0700 when missing and checks that it is a
// directory of this user's, not a symlink to one.
func makeOwnDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || !ownedByUs(fi) {
		return fmt.Errorf("%s is not a directory of this user", dir)
	}
	return os.Chmod(dir, 0o700)
}

// workDir is the directory the agent works in: where it starts. With
// --remote the session's directory is the target's, named by the target,
// and nothing of a directory of that name here is made writable.
func (s *Start) workDir() []string {
	if s.Dir != "" {
		return []string{s.Dir}
	}
	if wd, err := os.Getwd(); err == nil {
		return []string{wd}
	}
	return nil
}

// agentPolicy is the agent's sandbox: base, plus what its profile says it
// writes, whose missing paths are created first (a rule needs an existing
// path), plus extra (its npm cache). In read-only mode the agent may
// still write its own state, and nothing else: a workspace-write policy
// of only its profile's paths, and of its own directories of the
// workspaces it works in (dirs) that exist, but for their Protect
// entries unless WritableConfig (readOnlyWorkspaceConfig).
func agentPolicy(base *sandbox.Policy, prof *agents.Resolved, extra string, dirs []string) (*sandbox.Policy, error) {
	p := *base
	p.Writable = slices.Clone(p.Writable)
	if p.Mode == sandbox.Off {
		return &p, nil
	}
	var paths []string
	if prof != nil {
		// The agent reads its own login, and no other agent's.
		p.Readable = append(slices.Clone(p.Readable), prof.Credentials...)
		if p.WritableConfig {
			// The agent writes the originals of its shadows then.
			if err := prof.Unshadowed(); err != nil {
				return nil, err
			}
		}
		if err := prof.Prepare(); err != nil {
			return nil, err
		}
		if !p.WritableConfig {
			if err := prof.PrepareShadows(); err != nil {
				return nil, err
			}
		}
		paths = prof.Paths()
		if !p.WritableConfig {
			// Its config files exist, so that they are mounted read-only
			// rather than reserved by a directory the agent cannot read.
			if err := prof.PrepareConfig(); err != nil {
				return nil, err
			}
			// A workspace's protected names cover an agent's whole state
			// directory when the workspace is the home directory
			// (~/.claude among them); there the profile's finer list
			// stands instead, so that the agent can still write its
			// sessions.
			p.Protected = slices.DeleteFunc(slices.Clone(p.Protected), func(x string) bool {
				return slices.ContainsFunc(paths, func(w string) bool { return w == x || strings.HasPrefix(w, x+"/") })
			})
			p.Protected = append(p.Protected, prof.Config...)
			protected, err := workspaceConfig(p.Protected, p.Writable, prof.WorkspaceConfig)
			if err != nil {
				return nil, err
			}
			p.Protected = protected
		}
	}
	if extra != "" {
		paths = append(paths, extra)
	}
	if len(paths) == 0 {
		return &p, nil
	}
	if p.Mode == sandbox.ReadOnly {
		p.Mode, p.Writable, p.Caches, p.CacheDir = sandbox.WorkspaceWrite, nil, nil, ""
		if prof != nil {
			own, protect := readOnlyWorkspaceConfig(dirs, prof.WorkspaceConfig)
			paths = append(paths, own...)
			if !p.WritableConfig {
				p.Protected = append(p.Protected, protect...)
			}
		}
	}
	for _, w := range paths {
		if !slices.Contains(p.Writable, w) {
			p.Writable = append(p.Writable, w)
		}
	}
	return &p, nil
}

// agentEnv adds to cmd's environment (after Wrap, which set TMPDIR) the
// profile's variables: its temporary-directory variables at the agent's
// TMPDIR, its caches at their lasting directories, XDG_CACHE_HOME back at
// the cache directory its state is in (Resolved.CacheHome), those that point it at
// its shadows when shadowed, and as root the variables that tell the
// agent it is sandboxed, which it now is.
func agentEnv(cmd *exec.Cmd, a *sandbox.Applied, prof *agents.Resolved, shadowed bool) {
	if prof == nil {
		return
	}
	env := cmd.Environ()
	if a.TempDir != "" {
		for _, v := range prof.TempEnv {
			env = append(env, v+"="+a.TempDir)
		}
		// A cache kept in the TMPDIR, new every run, would start cold
		// every run: it is kept where the profile says, which the
		// agent's policy made writable.
		env = append(env, prof.Env...)
		if prof.CacheHome != "" {
			env = append(env, "XDG_CACHE_HOME="+prof.CacheHome)
		}
	}
	if shadowed {
		env = append(env, prof.ShadowEnv()...)
	}
	if os.Geteuid() == 0 && a.Confined() {
		env = append(env, prof.RootEnv...)
	}
	cmd.Env = env
}

// readOnlyWorkspaceConfig is what a read-only agent may write of the
// workspaces it works in (dirs): each of its WorkspaceConfig directories
// that is there already, a real directory (a link is passed over, as
// one a command could have made), with the entries to keep protected in
// them. An agent that finds its directory in a workspace writes into it
// as it starts (opencode: .opencode/.gitignore), and fails when it
// cannot; one that finds none makes none, and none is made for it.
func readOnlyWorkspaceConfig(dirs []string, wcs []agents.WorkspaceConfig) (writable, protected []string) {
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		for _, wc := range wcs {
			x := filepath.Join(real, wc.Name)
			if fi, err := os.Lstat(x); err != nil || !fi.IsDir() || slices.Contains(writable, x) {
				continue
			}
			writable = append(writable, x)
			for _, n := range wc.Protect {
				protected = append(protected, filepath.Join(x, n))
			}
		}
	}
	return writable, protected
}

// workspaceConfig replaces, in protected, each directory of wcs that lies
// directly in one of roots by its Protect entries, after making it a real
// directory when missing (see agents.Profile.WorkspaceConfig). A link in
// its place is refused, as any link a sandboxed command could have made.
func workspaceConfig(protected, roots []string, wcs []agents.WorkspaceConfig) ([]string, error) {
	if len(wcs) == 0 {
		return protected, nil
	}
	var out []string
	for _, x := range protected {
		i := slices.IndexFunc(wcs, func(wc agents.WorkspaceConfig) bool { return wc.Name == filepath.Base(x) })
		if i < 0 || !slices.Contains(roots, filepath.Dir(x)) {
			out = append(out, x)
			continue
		}
		if _, err := sandbox.MkdirAll(x, 0o755); err != nil {
			return nil, fmt.Errorf("making the agent's %s in the workspace: %w", wcs[i].Name, err)
		}
		for _, n := range wcs[i].Protect {
			out = append(out, filepath.Join(x, n))
		}
	}
	return out, nil
}
