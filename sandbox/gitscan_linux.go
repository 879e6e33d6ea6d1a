package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
	// gitSearchBudget bounds the directories read in the caches
	// (Policy.Caches) together, so that a huge cache cannot stall every
	// start; a cut is reported (Applied.GitSearchCut). In Policy.Writable
	// the search is not cut: a command that makes enough directories in
	// front of a repository must not get its .git writable next time.
	gitSearchBudget = 20000
	// rootSearchMax bounds the directories read in Policy.Writable only
	// so that the search ends: past it, Wrap fails rather than leave a
	// repository writable. A million empty directories take a second or
	// two to go through.
	rootSearchMax = 1 << 20
	// gitFileMax is how much of a .git file is read for its gitdir line.
	gitFileMax = 4096
)

// findGit returns the .git entries (directories, and the .git files of
// worktrees and submodules) within gitSearchDepth of each of dirs, and
// the directories those files point to (gitdir:) that lie in dirs, with
// whether the budget of directories to visit in the caches ran out. The
// first nRoots of dirs are searched whole (up to rootMax directories,
// past which it fails), the others within budget. Symlinks
// are not followed: a symlinked .git, or a link to a directory elsewhere,
// leads outside the writable paths, which are read-only anyway.
func findGit(dirs []string, nRoots, rootMax, budget int) (found []string, exhausted bool, err error) {
	s := &gitSearch{dirs: dirs, seen: map[string]bool{}}
	s.budget = rootMax
	if root, cut := s.run(0, nRoots); cut {
		return nil, false, fmt.Errorf("sandbox: the search for repositories in %s stopped after %d directories, and a .git further on would be writable; remove directories there, or set WritableGit", root, rootMax)
	}
	s.budget = budget
	_, exhausted = s.run(nRoots, len(dirs))
	return s.found, exhausted, nil
}

// gitSearch is one findGit.
type gitSearch struct {
	dirs   []string
	budget int
	found  []string
	seen   map[string]bool
	// listed counts the directories read whole, for the tests;
	// everyLeaf makes them read the leaves too.
	listed    int
	everyLeaf bool
}

func (s *gitSearch) add(p string) {
	if !s.seen[p] {
		s.seen[p] = true
		s.found = append(s.found, p)
	}
}

// run searches dirs[from:to], and reports the first whose search the
// budget cut. A directory below another of dirs[:to] is searched from
// that one (one level less deep).
func (s *gitSearch) run(from, to int) (cutIn string, exhausted bool) {
	type level struct {
		dir   string
		depth int
	}
	for i := from; i < to; i++ {
		root := s.dirs[i]
		if nestedIn(root, s.dirs[:to], i) {
			continue
		}
		leaves := s.leafTest(root)
		queue := []level{{root, 0}}
		for len(queue) > 0 {
			l := queue[0]
			queue = queue[1:]
			if s.budget == 0 {
				return root, true
			}
			s.budget--
			if l.depth > 0 && leaves(l.dir) {
				// No subdirectory, so no repository of its own: only
				// its .git, if any, is looked at.
				if fi, err := os.Lstat(filepath.Join(l.dir, ".git")); err == nil {
					s.gitEntry(filepath.Join(l.dir, ".git"), fi.Mode().Type())
				}
				continue
			}
			s.listed++
			entries, err := os.ReadDir(l.dir)
			if err != nil {
				continue // unreadable: a command cannot write there either
			}
			if l.depth > 0 && isRepository(entries) {
				// A bare repository, or a git directory kept apart from
				// its work tree: git takes it for one when run inside it.
				s.add(l.dir)
				continue
			}
			for _, e := range entries {
				// Paths are joined only for what is used: a build cache's
				// directories hold tens of thousands of files between them.
				if e.Name() == ".git" {
					s.gitEntry(filepath.Join(l.dir, e.Name()), e.Type())
					continue // never descend into a repository's own data
				}
				if e.IsDir() && l.depth < gitSearchDepth {
					queue = append(queue, level{filepath.Join(l.dir, e.Name()), l.depth + 1})
				}
			}
		}
	}
	return "", false
}

// gitEntry adds a .git entry at p of type typ, and what it leads to.
func (s *gitSearch) gitEntry(p string, typ os.FileMode) {
	switch {
	case typ.IsDir():
		s.add(p)
	case typ.IsRegular():
		s.add(p)
		if target, ok := readGitFile(p); ok && within(target, s.dirs) {
			s.add(target)
		}
	case typ&os.ModeSymlink != 0:
		// Git follows it; so does the mount.
		if target, err := filepath.EvalSymlinks(p); err == nil && within(target, s.dirs) {
			if fi, err := os.Stat(target); err == nil && fi.IsDir() {
				s.add(target)
			}
		}
	}
}

// Filesystems whose directories count their subdirectories in their link
// count (2 + subdirectories), as find's leaf optimisation relies on.
// Others (btrfs says 1, overlayfs and FUSE say what they like) are read
// whole.
var leafCountingFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, // ext2, ext3 and ext4 share it
	unix.XFS_SUPER_MAGIC:  true,
	unix.TMPFS_MAGIC:      true,
}

// leafTest returns what tells, below root, a directory with no
// subdirectory without reading it: its link count is 2 and it is on
// root's filesystem, one that counts them. A build cache's 256 shards
// hold thousands of files each; reading them all was most of the cost of
// planning a sandbox.
func (s *gitSearch) leafTest(root string) func(dir string) bool {
	never := func(string) bool { return false }
	if s.everyLeaf {
		return never
	}
	var fs unix.Statfs_t
	var st unix.Stat_t
	if unix.Statfs(root, &fs) != nil || !leafCountingFS[int64(fs.Type)] || unix.Lstat(root, &st) != nil {
		return never
	}
	dev := st.Dev
	return func(dir string) bool {
		var st unix.Stat_t
		return unix.Lstat(dir, &st) == nil && st.Dev == dev && st.Nlink == 2 && st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
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
