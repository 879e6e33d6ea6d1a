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
	// Credentials are the profile's, absolute.
	Credentials []string
	// MCPEnv as in Profile.
	MCPEnv []string
}

// Resolve works p out in the environment of getenv, with extra (an
// agents.json entry's own writable paths, already absolute) added as
// directories or files, whichever they are ("" entries are skipped). A
// path that cannot be resolved (no HOME) is an error.
func (p Profile) Resolve(getenv func(string) string, extra []string) (*Resolved, error) {
	r := &Resolved{Seeds: map[string]string{}, ConfigSeeds: map[string]string{}, TempEnv: slices.Clone(p.TempEnv), RootEnv: slices.Clone(p.RootEnv),
		ConfinedArgs: slices.Clone(p.ConfinedArgs), ConfinedModes: slices.Clone(p.ConfinedModes), NotByDefault: p.NotByDefault, WorkspaceConfig: slices.Clone(p.WorkspaceConfig),
		MCPEnv: slices.Clone(p.MCPEnv)}
	if err := r.addWritable(p, getenv); err != nil {
		return nil, err
	}
	r.addConfig(p, getenv)
	if err := r.addShadows(p.Shadows, getenv); err != nil {
		return nil, err
	}
	r.addExtra(extra)
	return r, nil
}

// errNoHome is the error for a path under HOME when HOME is unusable.
func errNoHome(what fmt.Stringer) error {
	return fmt.Errorf("cannot place %s: HOME is not an absolute path", what)
}

// addWritable adds the places the agent writes: its directories, those its
// lasting environment variables name, and its files with their seeds.
func (r *Resolved) addWritable(p Profile, getenv func(string) string) error {
	for _, d := range p.Dirs {
		path := d.resolve(getenv)
		if path == "" {
			return errNoHome(d)
		}
		if d.Base == CacheHome && (d.Env == "" || getenv(d.Env) == "") {
			r.CacheHome = CacheHome.dir(getenv)
		}
		r.addDir(path)
	}
	for _, e := range p.LastingEnv {
		path := e.Dir.resolve(getenv)
		if path == "" {
			return errNoHome(e.Dir)
		}
		r.addDir(path)
		r.Env = append(r.Env, e.Var+"="+path)
	}
	for _, f := range p.Files {
		path := f.resolve(getenv)
		if path == "" {
			return errNoHome(f)
		}
		r.Files = append(r.Files, path)
		r.Seeds[path] = f.Seed
	}
	return nil
}

// addDir adds path to r.Dirs once.
func (r *Resolved) addDir(path string) {
	if !slices.Contains(r.Dirs, path) {
		r.Dirs = append(r.Dirs, path)
	}
}

// addConfig adds the agent's configuration, which a confined run reads
// and may not write: its files (with seeds), its directories and the files
// it reads only when they exist; and its credential files. One that
// cannot be placed is left out.
func (r *Resolved) addConfig(p Profile, getenv func(string) string) {
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
	for _, c := range p.Credentials {
		if path := c.resolve(getenv); path != "" {
			r.Credentials = append(r.Credentials, path)
		}
	}
}

// addShadows resolves the shadowed files; one whose variable the user set
// is not shadowed, and is named in r.Unprotected.
func (r *Resolved) addShadows(shadows []Shadow, getenv func(string) string) error {
	for _, sh := range shadows {
		dir, file := sh.Dir.resolve(getenv), sh.File.resolve(getenv)
		if dir == "" || file == "" {
			return errNoHome(sh.File)
		}
		if v := getenv(sh.Var); v != "" {
			r.Unprotected = append(r.Unprotected, fmt.Sprintf("%s: with %s set, the agent keeps it in the directory it writes, and its unconfined runs trust what a confined one wrote there", filepath.Join(dir, sh.Name), sh.Var))
			continue
		}
		r.Shadows = append(r.Shadows, ResolvedShadow{Var: sh.Var, Dir: dir, File: file, Path: filepath.Join(dir, sh.Name), Seed: sh.Seed})
	}
	return nil
}

// addExtra adds the user's extra writable paths: an existing file as a
// file, anything else as a directory.
func (r *Resolved) addExtra(extra []string) {
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
// (see Profile.ConfigFiles); it leaves the directories to the sandbox,
// but for their parents in the agent's own Dirs, which it makes (0700)
// when missing: the sandbox reserves a missing protected path by its
// first missing directory, and a parent reserved so would be read-only
// as a whole (omp keeps its database in ~/.omp/agent, whose extensions/,
// hooks/ and skills/ are config).
func (r *Resolved) PrepareConfig() error {
	for _, path := range r.Config {
		if _, seeded := r.ConfigSeeds[path]; seeded {
			continue
		}
		parent := filepath.Dir(path)
		if !slices.ContainsFunc(r.Dirs, func(d string) bool { return strings.HasPrefix(parent, d+"/") }) {
			continue
		}
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("creating the directory of the agent's config: %w", err)
		}
	}
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
