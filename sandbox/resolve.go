package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Writable paths are resolved without trusting a symlink that a sandboxed
// command could have made. ~/.cache is writable for commands: one that
// makes ~/.cache/go-build a link to the home directory would otherwise
// have the next sandbox, which lists that cache because it now exists,
// make the whole home directory writable. A link is trusted where no
// sandbox writes: in system directories (/home -> /data/home, macOS's
// /tmp -> /private/tmp). It is refused where one could: in the home
// directory (a workspace may be the home directory itself, and the caches
// are there), in the temporary directory, in a world-writable directory,
// and in another path of the same policy's writable set.

// A LinkError says that a path is reached through a symlink that a
// sandboxed command could have made, and so is not made writable.
type LinkError struct {
	Path   string // the path as given
	Link   string // the symlink on its way
	Target string // what the symlink points to
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is reached through the symlink %s -> %s, in a directory sandboxed commands can write", e.Path, e.Link, e.Target)
}

// maxLinks is how many symlinks one resolution follows, as Linux's
// MAXSYMLINKS.
const maxLinks = 40

// linkStep is a symlink a resolution followed, and the directory (real)
// it lies in.
type linkStep struct {
	link, target, dir string
}

// resolver resolves writable paths against the directories where a link
// is not to be trusted.
type resolver struct {
	untrusted []string // clean; names and real paths
}

// newResolver returns a resolver that refuses links in the home
// directory, the temporary directory and extra (by name and by real
// path).
func newResolver(extra ...string) *resolver {
	r := &resolver{}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if p == "/" {
			return // every link would be refused, the system's too
		}
		r.untrusted = append(r.untrusted, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p && real != "/" {
			r.untrusted = append(r.untrusted, real)
		}
	}
	home, _ := os.UserHomeDir()
	add(home)
	add(os.TempDir())
	for _, e := range extra {
		add(e)
	}
	return r
}

// resolve returns the real path of path, following the symlinks on its
// way that lie outside r's untrusted directories, with the links it
// followed. A link inside one of them, or in a world-writable directory,
// is a *LinkError.
func (r *resolver) resolve(path string) (string, []linkStep, error) {
	if !filepath.IsAbs(path) {
		return "", nil, fmt.Errorf("%q is not absolute", path)
	}
	resolved := "/"
	rest := splitPath(path)
	var steps []linkStep
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved) // resolved has no links
			continue
		}
		next := filepath.Join(resolved, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		if r.planted(resolved) {
			return "", nil, &LinkError{Path: path, Link: next, Target: target}
		}
		if len(steps) == maxLinks {
			return "", nil, &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
		}
		steps = append(steps, linkStep{link: next, target: target, dir: resolved})
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(splitPath(target), rest...)
	}
	return resolved, steps, nil
}

// planted reports whether a link in dir (real) may have been put there by
// a sandboxed command, or by another user.
func (r *resolver) planted(dir string) bool {
	if within(dir, r.untrusted) {
		return true
	}
	fi, err := os.Lstat(dir)
	return err != nil || fi.Mode().Perm()&0o002 != 0
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(filepath.ToSlash(p), "/"), "/")
}

// ResolvePath returns the real path of path as the sandbox resolves a
// writable one: symlinks in system directories are followed; one in the
// home directory, the temporary directory or a world-writable directory,
// where a sandboxed command (or another user) could have made it, is
// refused with a *LinkError naming it. Callers use it for a path they are
// about to make writable, or to create (see MkdirAll).
func ResolvePath(path string) (string, error) {
	real, _, err := newResolver().resolve(path)
	return real, err
}

// MkdirAll creates dir and its missing parents (mode perm) as real
// directories, and returns its real path. Like ResolvePath, it refuses a
// symlink where a sandboxed command could have made one, in the part that
// exists and in what it creates: a directory that turns out to be a link
// when it is created (made in between) is refused too. A path that exists
// and is not a directory is an error.
func MkdirAll(dir string, perm fs.FileMode) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	// The longest prefix that exists, resolved; the rest is created one
	// component at a time, never following what appears there.
	var missing []string
	base := dir
	for {
		if _, err := os.Lstat(base); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(base)
		if parent == base {
			break
		}
		missing = append(missing, filepath.Base(base))
		base = parent
	}
	real, err := ResolvePath(base)
	if err != nil {
		return "", err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		next := filepath.Join(real, missing[i])
		if err := os.Mkdir(next, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(next)
			return "", &LinkError{Path: dir, Link: next, Target: target}
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a directory", next)
		}
		real = next
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return real, nil
}

// within reports whether path is one of dirs or below one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) || d == "/" {
			return true
		}
	}
	return false
}
