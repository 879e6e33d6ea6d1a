package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// placeholderMark marks the placeholders Wrap makes to reserve a protected
// name, so that another sandbox, or the next start after a kill -9, knows
// one for a placeholder and not the user's own: the sticky bit, which the
// mkdir or open that makes a placeholder sets in the same step (a
// placeholder made under a temporary name, marked and renamed into place
// cost three times the metadata updates). No one's .vscode or .mcp.json
// has it.
const placeholderMark = unix.S_ISVTX

// placeholderAttr is the mark where the file system drops the sticky bit,
// and the mark of placeholders made before placeholderMark.
const placeholderAttr = "user.acpterm.placeholder"

// errSymlink: a protected name is a symlink, which no mount can cover.
var errSymlink = errors.New("it is a symlink, which cannot be mounted over")

// addProtected sorts Policy.Protected into the paths that exist in the
// writable paths (mounted read-only by the helper) and the first missing
// component of those that do not (reserved by Wrap). Paths outside the
// writable paths are read-only anyway, and left out; what cannot be
// protected is named in pr.unprotected.
func (pr *prepared) addProtected(p *Policy) {
	seen := map[string]bool{}
	rs := evalCache{}
	for _, path := range p.Protected {
		if filepath.Base(path) == ".git" && p.WritableGit || filepath.Base(path) != ".git" && p.WritableConfig {
			continue
		}
		if !filepath.IsAbs(path) {
			pr.unprotected = append(pr.unprotected, fmt.Sprintf("cannot protect %q: not an absolute path", path))
			continue
		}
		real, at, err := rs.locate(path)
		if err != nil {
			if real != "" && pr.writableAt(real) {
				pr.unprotected = append(pr.unprotected, fmt.Sprintf("cannot protect %s: %v", path, err))
			}
			continue
		}
		if seen[at] || !pr.writableAt(at) {
			continue
		}
		// A placeholder left by a killed run is taken over, to be removed
		// at the end, even where it is mounted read-only anyway (a .git
		// the search for repositories found).
		leftover := markedPlaceholder(at)
		if !leftover && (under(at, pr.pl.ReadOnly) || under(at, pr.protect) || under(at, pr.reserve)) {
			continue
		}
		seen[at] = true
		pr.protected = append(pr.protected, real)
		if _, err := os.Lstat(at); err == nil && at == real && !leftover {
			pr.protect = append(pr.protect, real)
			continue
		}
		// Missing, or a placeholder of another sandbox or of a killed
		// run: Wrap takes it over.
		pr.reserve = append(pr.reserve, at)
	}
}

// locate resolves path: real is its real path (the missing part joined to
// the real path of its longest existing prefix), and at what must be
// mounted over to protect it: real itself when it exists, else its first
// missing component. A symlink at path is errSymlink, with real set.
func (rs evalCache) locate(path string) (real, at string, err error) {
	path = filepath.Clean(path)
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if filepath.Dir(p) == p {
				return "", "", err
			}
			rest = append(rest, filepath.Base(p))
			continue
		}
		if err != nil {
			return "", "", err
		}
		if len(rest) == 0 && fi.Mode()&fs.ModeSymlink != 0 {
			dir, err := rs.eval(filepath.Dir(p))
			if err != nil {
				return "", "", err
			}
			return filepath.Join(dir, filepath.Base(p)), "", errSymlink
		}
		var r string
		if len(rest) == 0 {
			// The entry itself is no symlink: its directory's real path.
			dir, err := rs.eval(filepath.Dir(p))
			if err != nil {
				return "", "", err
			}
			r = filepath.Join(dir, filepath.Base(p))
			return r, r, nil
		}
		if r, err = rs.eval(p); err != nil {
			return "", "", err
		}
		if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
			return "", "", fmt.Errorf("%s is not a directory", p)
		}
		first := filepath.Join(r, rest[len(rest)-1])
		for i := len(rest) - 1; i >= 0; i-- {
			r = filepath.Join(r, rest[i])
		}
		return r, first, nil
	}
}

// evalCache caches filepath.EvalSymlinks of the directories the protected
// paths lie in: most share one (a root).
type evalCache map[string]string

func (rs evalCache) eval(dir string) (string, error) {
	if r, ok := rs[dir]; ok {
		return r, nil
	}
	r, err := filepath.EvalSymlinks(dir)
	if err == nil {
		rs[dir] = r
	}
	return r, err
}

// writableAt reports whether path is one of the writable files or lies in
// one of the writable directories.
func (pr *prepared) writableAt(path string) bool {
	for _, f := range pr.pl.Files {
		if f == path {
			return true
		}
	}
	return under(path, pr.pl.Dirs)
}

// under reports whether path is one of dirs or lies below one.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") || d == "/" {
			return true
		}
	}
	return false
}

// reservation is the placeholders one sandbox holds.
type reservation struct {
	mu   sync.Mutex
	held []*heldDir
}

// heldDir is a placeholder this process holds: a descriptor of it with a
// shared flock, so that only the last sandbox of any process removes it,
// and how many of this process's sandboxes use it.
type heldDir struct {
	path string
	fd   int
	file bool // an empty file, not a directory (placeholderIsFile)
	refs int  // guarded by heldDirs
}

// heldDirs are this process's placeholders by path. A sandbox that starts
// while another of the process holds a placeholder (the session's agent,
// its spawner) shares it, without touching the file system.
var heldDirs = struct {
	sync.Mutex
	m map[string]*heldDir
}{m: map[string]*heldDir{}}

// reserve makes or takes over a placeholder at each of paths. It returns
// them, the paths to mount read-only (the placeholders, and any that turned
// out to exist meanwhile), and what could not be reserved.
//
// The placeholders are made side by side: each creation is a metadata
// update that may wait for the file system's journal, and waits overlap.
func reserve(paths []string) (r *reservation, mounts, lost []string) {
	heldDirs.Lock()
	defer heldDirs.Unlock()
	r = &reservation{}
	var todo []string
	for _, p := range paths {
		if h := heldDirs.m[p]; h != nil && sameFile(h.fd, p) {
			h.refs++
			r.held = append(r.held, h)
			mounts = append(mounts, p)
			continue
		}
		todo = append(todo, p)
	}
	fds := make([]int, len(todo))
	errs := make([]error, len(todo))
	parallel(len(todo), func(i int) { fds[i], errs[i] = holdPlaceholder(todo[i]) })
	for i, p := range todo {
		switch {
		case errors.Is(errs[i], unix.EACCES), errors.Is(errs[i], unix.EPERM), errors.Is(errs[i], unix.EROFS):
			// What this process may not create there, the command, with
			// the same ids and fewer rights, may not either.
			continue
		case errs[i] != nil:
			lost = append(lost, fmt.Sprintf("cannot reserve %s: %v", p, errs[i]))
			continue
		case fds[i] >= 0:
			h := &heldDir{path: p, fd: fds[i], file: placeholderIsFile(p), refs: 1}
			heldDirs.m[p] = h // one that was removed under us is dropped
			r.held = append(r.held, h)
		}
		mounts = append(mounts, p)
	}
	return r, mounts, lost
}

// parallel runs f(0) … f(n-1) at once and waits for them all.
func parallel(n int, f func(int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// holdPlaceholder makes a placeholder at path, or takes over the one
// there, and returns a descriptor of it holding a shared flock; or -1 when
// path is now something else (which is then protected as it is). The
// placeholder is made marked (placeholderMark, in the mode the mkdir or
// open gives it), so that no other sandbox ever sees it unmarked.
func holdPlaceholder(path string) (int, error) {
	file := placeholderIsFile(path)
	for range 3 {
		fd, made, err := makePlaceholder(path, file)
		if errors.Is(err, unix.EEXIST) {
			fd, err = openPlaceholder(path, file)
		}
		switch {
		case errors.Is(err, unix.ENOENT):
			continue // removed by its last holder meanwhile
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, errNotPlaceholderKind):
			return -1, nil
		case err != nil:
			return -1, err
		}
		if made && !isPlaceholder(fd) {
			// A file system that drops the sticky bit: the attribute
			// instead, where it has user attributes. Without either, a
			// placeholder a kill -9 leaves is taken for the user's own.
			_ = unix.Fsetxattr(fd, placeholderAttr, []byte("1"), 0)
		}
		if !made && !isPlaceholder(fd) {
			unix.Close(fd)
			return -1, nil
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if !sameFile(fd, path) {
			// Its last holder removed it between the open and the lock.
			unix.Close(fd)
			continue
		}
		return fd, nil
	}
	return -1, errors.New("it kept changing")
}

// errNotPlaceholderKind: what is at a placeholder's path is not of the
// placeholder's kind (a directory where a file would be).
var errNotPlaceholderKind = errors.New("not a placeholder")

// makePlaceholder makes a marked empty directory, or a marked read-only
// file holding placeholderContent, at path, and opens it as
// openPlaceholder does; made is false, with EEXIST, when something is
// there already.
func makePlaceholder(path string, file bool) (fd int, made bool, err error) {
	if file {
		return makeFilePlaceholder(path)
	}
	if err := unix.Mkdir(path, 0o755|placeholderMark); err != nil {
		return -1, false, err
	}
	fd, err = openPlaceholder(path, false)
	return fd, err == nil, err
}

func makeFilePlaceholder(path string) (int, bool, error) {
	content := placeholderContent(path)
	flags := unix.O_RDONLY
	if content != "" {
		flags = unix.O_RDWR
	}
	fd, err := unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o444|placeholderMark)
	if err != nil || content == "" {
		return fd, err == nil, err
	}
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		unix.Close(fd)
		removePlaceholder(path, true)
		return -1, false, err
	}
	return fd, true, nil
}

// removePlaceholder removes the placeholder at path, if it is still as it
// was made: an rmdir fails on a directory something was put in, and a file
// that holds anything but placeholderContent is left.
func removePlaceholder(path string, file bool) {
	if !file {
		_ = unix.Rmdir(path)
		return
	}
	if untouchedFile(path) {
		_ = unix.Unlink(path)
	}
}

// untouchedFile reports whether path is a regular file that holds
// placeholderContent, or nothing, or what an earlier release's
// placeholder of a JSON file held ("{}\n", left by a run that was killed).
func untouchedFile(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	content := placeholderContent(path)
	ok := []string{content}
	if content != "" {
		ok = append(ok, "{}\n")
	}
	switch {
	case st.Size == 0:
		return true
	case !slices.ContainsFunc(ok, func(c string) bool { return st.Size == int64(len(c)) }):
		return false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf := make([]byte, len(content)+1)
	n, _ := unix.Read(fd, buf)
	return slices.Contains(ok, string(buf[:max(n, 0)]))
}

// openPlaceholder opens the placeholder at path, without following a
// link and without blocking; errNotPlaceholderKind when it is of the
// other kind.
func openPlaceholder(path string, file bool) (int, error) {
	if !file {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		return -1, errNotPlaceholderKind
	}
	return fd, nil
}

// markedPlaceholder reports whether path is a placeholder with the mark.
func markedPlaceholder(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return false
	}
	var b [8]byte
	_, err := unix.Lgetxattr(path, placeholderAttr, b[:])
	return marked(&st) || err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK
}

// isPlaceholder reports whether the placeholder open at fd carries the
// mark.
func isPlaceholder(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	var b [8]byte
	_, err := unix.Fgetxattr(fd, placeholderAttr, b[:])
	return marked(&st) || err == nil
}

// marked reports whether st is a directory or regular file with
// placeholderMark.
func marked(st *unix.Stat_t) bool {
	kind := st.Mode & unix.S_IFMT
	return st.Mode&placeholderMark != 0 && (kind == unix.S_IFDIR || kind == unix.S_IFREG)
}

// sameFile reports whether path still names the file open at fd.
func sameFile(fd int, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Lstat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// release removes each placeholder that no other sandbox holds, of this
// process or another, and lets go of the rest. It may be called more than
// once.
func (r *reservation) release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	held := r.held
	r.held = nil
	r.mu.Unlock()
	var done []*heldDir
	heldDirs.Lock()
	for _, h := range held {
		if h.refs--; h.refs == 0 {
			if heldDirs.m[h.path] == h {
				delete(heldDirs.m, h.path)
			}
			done = append(done, h)
		}
	}
	heldDirs.Unlock()
	// Side by side: a directory that was a mount point until the sandbox
	// ended is removed only after an RCU grace period, and grace periods
	// waited for together are one wait.
	parallel(len(done), func(i int) {
		h := done[i]
		if unix.Flock(h.fd, unix.LOCK_EX|unix.LOCK_NB) == nil && sameFile(h.fd, h.path) {
			// Leaves it if anything was put in it.
			removePlaceholder(h.path, h.file)
		}
		unix.Close(h.fd)
	})
}
