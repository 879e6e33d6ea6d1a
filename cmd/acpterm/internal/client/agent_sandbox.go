package client

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// This file confines the agent as a whole (Config.SandboxAgent): the
// directory npx starts in, and the line that says what is confined. The
// agent's sandbox is AgentStart's (agent_start.go).

// isNpx reports whether the agent is started through npx, which runs a
// package of the project around its working directory in preference to
// the registry's: a node_modules planted in the workspace by a command
// would run, unsandboxed, at the next start.
func isNpx(agent []string) bool {
	return len(agent) > 0 && filepath.Base(agent[0]) == "npx"
}

// npxPackageJSON makes its directory an npm project of its own: npm looks
// for the project of its working directory upwards, and stops at the first
// directory holding a package.json or a node_modules. Without it a
// node_modules in a parent (the home directory, when that is a workspace)
// would be taken.
const npxPackageJSON = `{"name": "acpterm-npx", "private": true}` + "\n"

// npxDir returns the directory npx is started in: acpterm's state
// directory's "npx", made 0700 with a package.json of its own, unless a
// sandboxed command could write there (the state directory lies in one of
// the writable paths, a workspace that is the home directory), or it
// cannot be made: then acpterm-npx-UID of the same shape in the system's
// temporary directory, which sandboxed commands cannot write either. The
// session's cwd reaches the agent in session/new only. writable are the
// paths the run's commands may write.
func npxDir(writable []string) (string, error) {
	if base, err := sessionstore.StateDir(); err == nil {
		dir := filepath.Join(base, "npx")
		if !under(dir, writable) {
			if err := makeNpxDir(dir); err == nil {
				return dir, nil
			}
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("acpterm-npx-%d", os.Geteuid()))
	if err := makeNpxDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// makeNpxDir makes dir, and its package.json, and clears anything else in
// it: nothing but acpterm writes there, so anything else was planted.
func makeNpxDir(dir string) error {
	// In a shared directory, someone else may have put a symlink, or a
	// directory of theirs, there first: makeOwnDir refuses both.
	if err := makeOwnDir(dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == "package.json" && e.Type().IsRegular() {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "package.json"), []byte(npxPackageJSON), 0o600)
}

// under reports whether path is one of dirs or below one of them, by
// name, with symlinks of either side resolved where they exist.
func under(path string, dirs []string) bool {
	p := resolvedPath(path)
	for _, d := range dirs {
		r := resolvedPath(d)
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// resolvedPath is path with the symlinks of its longest existing prefix
// resolved.
func resolvedPath(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(p) == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// commandEnv is the base environment of the commands run for
// terminal/create: acpterm's, without the credentials Config.PassEnv does
// not name. What it withholds is named on the confinement line.
func (d *driver) commandEnv() []string {
	env, dropped := terminal.WithoutSecrets(os.Environ(), d.cfg.PassEnv...)
	d.withheld = dropped
	return env
}

// confinementLine says what the run confines, for the one dim line at its
// start, with what the kernel here could not give.
func (d *driver) confinementLine() string {
	c := &d.cfg
	sp := d.sandbox
	mode := sp.Mode.String()
	if sp.Network == sandbox.DenyNetwork {
		mode += ", network deny"
	}
	var missing, leftOut []string
	addNew := func(to *[]string, from []string) {
		for _, m := range from {
			if !slices.Contains(*to, m) {
				*to = append(*to, m)
			}
		}
	}
	cut := false
	for _, a := range d.appliedSandboxes() {
		addNew(&missing, a.Missing)
		addNew(&leftOut, a.LeftOut)
		cut = cut || a.GitSearchCut
	}
	if len(leftOut) > 0 {
		mode += "; caches left out: " + textsafe.Line(strings.Join(leftOut, "; "))
	}
	if cut {
		mode += "; the search for repositories in the caches was cut short: a .git further on is writable"
	}
	if len(missing) > 0 {
		mode += "; missing: " + strings.Join(missing, "; ")
	}
	if n := len(d.withheld); n > 0 {
		names := strings.Join(d.withheld[:min(n, 4)], ", ")
		if n > 4 {
			names += fmt.Sprintf(" and %d more", n-4)
		}
		mode += "; withheld from commands: " + textsafe.Line(names) + " (--pass-env NAME passes one)"
	}
	switch {
	case c.SandboxAgent && c.Remote != nil && c.Remote.Agent:
		return "sandbox: agent, on the target: its own state only; its commands there: " + mode
	case c.SandboxAgent && c.Remote != nil:
		return "sandbox: agent, here: its own state only; its commands, on the target: " + mode
	case c.SandboxAgent:
		return "sandbox: agent and its commands: " + mode
	case sp.Mode == sandbox.Off && sp.Network == sandbox.AllowNetwork:
		return "sandbox: off: the agent and its commands run with your rights"
	case c.AgentProfile != nil && c.AgentProfile.NotByDefault != "":
		return "sandbox: commands only: " + mode + " (the agent itself is not confined: " + c.AgentProfile.NotByDefault + "; --sandbox-agent confines it)"
	case c.AgentProfile != nil:
		return "sandbox: commands only: " + mode + " (the agent itself is not confined: --sandbox-agent=false)"
	}
	return "sandbox: commands only: " + mode + " (the agent itself is not confined: it has no profile, see acpterm agents; --sandbox-agent confines it)"
}

// appliedSandboxes are the sandboxes the confinement line speaks of: the
// commands' and, when it is confined, the agent's.
func (d *driver) appliedSandboxes() []*sandbox.Applied {
	var out []*sandbox.Applied
	if d.cmdSandbox != nil {
		out = append(out, d.cmdSandbox)
	}
	if d.cfg.SandboxAgent && d.agentSandbox != nil {
		out = append(out, d.agentSandbox)
	}
	return out
}

// showConfinement writes the confinement line to stderr, dim on a colour
// terminal: always where a person reads stderr, and otherwise when the
// agent itself is confined, which changes what it can do, or when a
// protection is missing here (a program reading stderr is told that much,
// and not more, on every run).
func (d *driver) showConfinement() {
	f, ok := d.cfg.Stderr.(*os.File)
	weakened := false
	for _, a := range d.appliedSandboxes() {
		weakened = weakened || len(a.Missing) > 0 || len(a.LeftOut) > 0 || a.GitSearchCut
	}
	if !d.cfg.SandboxAgent && !weakened && (!ok || !IsTerminal(f)) {
		return
	}
	d.writeStderr(render.Style{On: d.stderrColor()}.Dim("acpterm: " + d.confinementLine()))
}

// agentConfined reports whether the agent itself runs in acpterm's
// sandbox.
func (d *driver) agentConfined() bool {
	return d.cfg.SandboxAgent && d.agentSandbox != nil && d.agentSandbox.Confined()
}

// rootHint is what to add to a failure of the agent that is known to come
// from running it as root: Claude Code refuses to (its query closes before
// session/new is answered) unless IS_SANDBOX=1, which acpterm sets when it
// confines it.
func (d *driver) rootHint(msg string) string {
	if os.Geteuid() != 0 || !strings.Contains(msg, "Query closed before response received") {
		return ""
	}
	if d.agentConfined() {
		return ""
	}
	return "\n(hint: Claude Code refuses to run as root outside a sandbox: run it with --sandbox-agent, which sets IS_SANDBOX=1, or as another user)"
}
