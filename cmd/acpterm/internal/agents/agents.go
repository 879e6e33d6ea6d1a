// Package agents resolves the names of well-known ACP agents ("codex",
// "gemini", …) to the command lines that start them, so that
// `acpterm run codex` works without knowing each agent's package name and
// flags. A user's config file overrides and extends the built-in list.
package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Agent is how one named agent is started.
type Agent struct {
	Name string
	// Command is the program and arguments when it is installed (on PATH).
	Command []string
	// Package is the npm package that provides it, run with `npx -y` when
	// Command's program is not installed; "" means none.
	Package string
	// PackageArgs follow the package name on the npx command line.
	PackageArgs []string
	// FormerPackages are packages that provided the same program before
	// Package did: started through npx by name (an agents.json entry
	// pinning an older release), they get the agent's profile too.
	FormerPackages []string
	// FromConfig reports an entry of the user's config file.
	FromConfig bool
	// Writable are the paths an entry of the config file says the agent
	// writes (absolute, "~" expanded), added to its profile's.
	Writable []string
	// AllowHosts, from an entry of the config file, replace the hosts
	// the agent may reach when the network is limited to a list
	// (HostsFor); nil keeps its profile's.
	AllowHosts []string
}

// builtin are the agents people run most, with the launch commands their
// packages document (checked with the npm releases of 2026-12:
// @agentclientprotocol/claude-agent-acp 0.101.0 and
// @agentclientprotocol/codex-acp 2.6.0, which took over from the
// @zed-industries packages of the same programs, no longer maintained
// (claude-agent-acp 0.23.x, codex-acp 0.16.0); gemini-cli 0.61.0,
// opencode-ai 1.18.33, qwen-code 0.24.4; omp 18.2.3, which needs bun, and
// pi-acp 0.0.34, which needs pi, have no npx line).
var builtin = []Agent{
	{Name: "claude", Command: []string{"claude-agent-acp"}, Package: "@agentclientprotocol/claude-agent-acp",
		FormerPackages: []string{"@zed-industries/claude-agent-acp"}},
	{Name: "codex", Command: []string{"codex-acp"}, Package: "@agentclientprotocol/codex-acp",
		FormerPackages: []string{"@zed-industries/codex-acp"}},
	{Name: "gemini", Command: []string{"gemini", "--acp"}, Package: "@google/gemini-cli", PackageArgs: []string{"--acp"}},
	{Name: "opencode", Command: []string{"opencode", "acp"}, Package: "opencode-ai", PackageArgs: []string{"acp"}},
	{Name: "qwen", Command: []string{"qwen", "--acp"}, Package: "@qwen-code/qwen-code", PackageArgs: []string{"--acp"}},
	{Name: "omp", Command: []string{"omp", "--mode", "acp"}},
	{Name: "pi", Command: []string{"pi-acp"}},
}

// Registry is the built-in agents with the user's config applied.
type Registry struct {
	agents map[string]Agent
	// LookPath finds a program; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// configEntry is one agent of the config file: {"command": ["prog",
// "arg"], "writable": ["~/.prog"]}.
type configEntry struct {
	Command    []string `json:"command"`
	Writable   []string `json:"writable"`
	AllowHosts []string `json:"allowHosts"`
}

// maxWritable bounds an entry's writable paths.
const maxWritable = 64

// expandWritable checks an entry's writable paths and makes them absolute:
// "~" and "~/…" are the home directory; anything else must be absolute.
func expandWritable(paths []string) ([]string, error) {
	if len(paths) > maxWritable {
		return nil, fmt.Errorf("more than %d writable paths", maxWritable)
	}
	var out []string
	for _, p := range paths {
		if p == "" || strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("writable path %q is empty or holds a NUL", p)
		}
		if p == "~" || strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("writable path %q: %v", p, err)
			}
			p = filepath.Join(home, p[1:])
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("writable path %q is neither absolute nor under ~/", p)
		}
		p = filepath.Clean(p)
		if p == "/" {
			return nil, errors.New("writable path \"/\" would confine nothing")
		}
		out = append(out, p)
	}
	return out, nil
}

// ConfigPath is where Load reads the user's agents: agents.json in
// acpterm's directory of the user's config directory.
func ConfigPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "acpterm", "agents.json"), nil
}

// Load returns the built-in agents with those of the config file at path
// ("" means ConfigPath) added or replacing them. A missing file is no
// error; a malformed one is, naming the file.
func Load(path string) (*Registry, error) {
	r := &Registry{agents: map[string]Agent{}}
	for _, a := range builtin {
		r.agents[a.Name] = a
	}
	if path == "" {
		p, err := ConfigPath()
		if err != nil {
			return r, nil // no config directory: the built-in list
		}
		path = p
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg map[string]configEntry
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %v (want {\"NAME\": {\"command\": [\"PROGRAM\", \"ARG\"…], \"writable\": [\"~/PATH\"…]}})", path, err)
	}
	for name, e := range cfg {
		if name == "" || strings.ContainsAny(name, "/\\ ") || len(e.Command) == 0 || e.Command[0] == "" {
			return nil, fmt.Errorf("%s: agent %q needs a name without slashes or spaces and a non-empty command", path, name)
		}
		w, err := expandWritable(e.Writable)
		if err != nil {
			return nil, fmt.Errorf("%s: agent %q: %v", path, name, err)
		}
		if err := checkHosts(e.AllowHosts); err != nil {
			return nil, fmt.Errorf("%s: agent %q: %v", path, name, err)
		}
		r.agents[name] = Agent{Name: name, Command: slices.Clone(e.Command), FromConfig: true, Writable: w, AllowHosts: e.AllowHosts}
	}
	return r, nil
}

// Names returns the agents' names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.agents)) }

// Lookup returns the agent called name.
func (r *Registry) Lookup(name string) (Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
}

// How says how an agent would be started.
type How int

const (
	NotInstalled How = iota // neither its program nor npx is on PATH
	Installed               // its program is on PATH
	ViaNpx                  // through npx, which fetches the package
)

func (h How) String() string {
	switch h {
	case Installed:
		return "installed"
	case ViaNpx:
		return "via npx"
	}
	return "not installed"
}

// Resolve returns the command line that starts a, and how: its own
// program when installed, else `npx -y PACKAGE ARGS…` when it has a
// package and npx is installed. NotInstalled comes with an error that says
// how to install it.
func (r *Registry) Resolve(a Agent) ([]string, How, error) {
	look := r.LookPath
	if look == nil {
		look = exec.LookPath
	}
	if _, err := look(a.Command[0]); err == nil {
		return slices.Clone(a.Command), Installed, nil
	}
	if a.Package != "" {
		if _, err := look("npx"); err == nil {
			return append([]string{"npx", "-y", a.Package}, a.PackageArgs...), ViaNpx, nil
		}
		return nil, NotInstalled, fmt.Errorf("%s is not installed: %s is not on PATH, and neither is npx (install it with: npm install -g %s)", a.Name, a.Command[0], a.Package)
	}
	return nil, NotInstalled, fmt.Errorf("%s is not installed: %s is not on PATH", a.Name, a.Command[0])
}
