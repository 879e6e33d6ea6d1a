package sandbox

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Repositories in the writable paths. Git runs what a repository's config
// and hooks name (core.fsmonitor, core.pager, hooks/*) the next time the
// user, or a prompt theme, runs git there, outside any sandbox. So every
// repository already in the writable paths is kept read-only, not only
// the top one: a vendored clone, a directory of checkouts, a submodule.
const (
	// gitSearchDepth is how deep below each writable directory the search
	// looks for .git: 0 is the directory itself (DIR/.git), 4 reaches
	// DIR/a/b/c/d/.git.
	gitSearchDepth = 4
	// gitSearchBudget bounds the directories read, over all the writable
	// paths together, so that a huge cache cannot stall every start; the
	// roots come first in Policy.Writable and so are searched first.
	gitSearchBudget = 20000
	// gitFileMax is how much of a .git file is read for its gitdir line.
	gitFileMax = 4096
)

// findGit returns the .git entries (directories, and the .git files of
// worktrees and submodules) within gitSearchDepth of each of dirs, and
// the directories those files point to (gitdir:) that lie in dirs, with
// whether the budget of directories to read ran out. Symlinks are not followed: a symlinked .git,
// or a link to a directory elsewhere, leads outside the writable paths,
// which are read-only anyway.
func findGit(dirs []string, budget int) (found []string, exhausted bool) {
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			found = append(found, p)
		}
	}
	type level struct {
		dir   string
		depth int
	}
	for i, root := range dirs {
		if nestedIn(root, dirs, i) {
			// Searched from its parent (one level less deep).
			continue
		}
		queue := []level{{root, 0}}
		for len(queue) > 0 {
			l := queue[0]
			queue = queue[1:]
			if budget == 0 {
				return found, true
			}
			budget--
			entries, err := os.ReadDir(l.dir)
			if err != nil {
				continue // unreadable: a command cannot write there either
			}
			if l.depth > 0 && isRepository(entries) {
				// A bare repository, or a git directory kept apart from
				// its work tree: git takes it for one when run inside it.
				add(l.dir)
				continue
			}
			for _, e := range entries {
				// Paths are joined only for what is used: a build cache's
				// directories hold tens of thousands of files between them.
				if e.Name() == ".git" {
					p := filepath.Join(l.dir, e.Name())
					switch {
					case e.IsDir():
						add(p)
					case e.Type().IsRegular():
						add(p)
						if target, ok := readGitFile(p); ok && within(target, dirs) {
							add(target)
						}
					case e.Type()&os.ModeSymlink != 0:
						// Git follows it; so does the mount.
						if target, err := filepath.EvalSymlinks(p); err == nil && within(target, dirs) {
							if fi, err := os.Stat(target); err == nil && fi.IsDir() {
								add(target)
							}
						}
					}
					continue // never descend into a repository's own data
				}
				if e.IsDir() && l.depth < gitSearchDepth {
					queue = append(queue, level{filepath.Join(l.dir, e.Name()), l.depth + 1})
				}
			}
		}
	}
	return found, false
}

// isRepository reports whether a directory's entries make it a git
// directory as git recognises one: a HEAD file with objects and refs
// directories.
func isRepository(entries []os.DirEntry) bool {
	var head, objects, refs bool
	for _, e := range entries {
		switch e.Name() {
		case "HEAD":
			head = e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0
		case "objects":
			objects = e.IsDir()
		case "refs":
			refs = e.IsDir()
		}
	}
	return head && objects && refs
}

// readGitFile returns the directory a .git file points to, resolved
// (relative to the file's directory, symlinks followed).
func readGitFile(path string) (string, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO named .git must not block
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, gitFileMax))
	if err != nil {
		return "", false
	}
	dir, ok := parseGitdir(b)
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", false
	}
	return real, true
}

// parseGitdir reads the "gitdir: PATH" line a .git file starts with, as
// git does: the prefix exactly, the rest of the first line as the path,
// with a trailing carriage return and spaces dropped.
func parseGitdir(b []byte) (string, bool) {
	const prefix = "gitdir: "
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return "", false
	}
	line := b[len(prefix):]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	dir := strings.TrimRight(string(line), "\r \t")
	if dir == "" || strings.IndexByte(dir, 0) >= 0 {
		return "", false
	}
	return filepath.Clean(dir), true
}

// nestedIn reports whether dirs[i] lies below another of dirs.
func nestedIn(dir string, dirs []string, i int) bool {
	for j, d := range dirs {
		if j != i && d != dir && within(dir, []string{d}) {
			return true
		}
	}
	return false
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
