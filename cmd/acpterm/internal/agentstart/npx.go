package agentstart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
)

// IsNpx reports whether the agent is started through npx, which runs a
// package of the project around its working directory in preference to
// the registry's: a node_modules planted in the workspace by a command
// would run, unsandboxed, at the next start.
func IsNpx(agent []string) bool {
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
		if !Under(dir, writable) {
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

// Under reports whether path is one of dirs or below one of them, by
// name, with symlinks of either side resolved where they exist.
func Under(path string, dirs []string) bool {
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
