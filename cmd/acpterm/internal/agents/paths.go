package agents

import (
	"path/filepath"
)

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
