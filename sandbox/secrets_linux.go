package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// hideSpec is one path the helper hides (plan.Hide): a directory is
// covered by an empty directory, a file by a socket node (which no one
// can open: ENXIO, root included) or, Redacted, by a file holding
// Content. Show are the real paths below a hidden directory that are
// shown through it, each its own mount as the host has it.
type hideSpec struct {
	Path     string   `json:"path"`
	Show     []string `json:"show,omitempty"`
	Redacted bool     `json:"redacted,omitempty"`
	Content  []byte   `json:"content,omitempty"` // the redacted copy (Policy.Redacted)
}

// maxRedacted is the largest file Policy.Redacted copies without its
// credential lines; a larger one is hidden whole. The copy travels in the
// plan, an environment variable, which Linux caps at 128 KiB.
const maxRedacted = 64 << 10

// addHidden works out Policy.Hidden, Readable and Redacted into
// pr.pl.Hide, after the writable paths (which are shown through a hidden
// directory, and keep a hidden path that they are or lie below visible).
// What exists and cannot be looked at goes to pr.missing: it fails Wrap
// unless BestEffort, as anything left readable that was to be hidden must.
func (pr *prepared) addHidden(p *Policy) error {
	if p.Mode == Off || len(p.Hidden)+len(p.Redacted) == 0 {
		return nil
	}
	readable := realPaths(p.Readable)
	writable := append(slices.Clone(pr.pl.Dirs), pr.pl.Files...)
	shown := append(slices.Clone(readable), writable...)
	hidden, err := pr.hiddenPaths(p.Hidden, readable, writable)
	if err != nil {
		return err
	}
	for _, h := range hidden {
		spec := hideSpec{Path: h}
		for _, s := range shown {
			if s != h && under(s, []string{h}) && !slices.Contains(spec.Show, s) {
				spec.Show = append(spec.Show, s)
			}
		}
		pr.pl.Hide = append(pr.pl.Hide, spec)
		pr.applied.Hidden = append(pr.applied.Hidden, h)
		pr.applied.Shown = append(pr.applied.Shown, spec.Show...)
	}
	for _, f := range p.Redacted {
		pr.addRedacted(f, readable, hidden)
	}
	return nil
}

// hiddenPaths resolves the Hidden list: real paths that exist, none at or
// below a readable path nor a writable one itself (one below a writable
// path is hidden: the workspace may be the home directory), none below
// another of them, outermost first.
func (pr *prepared) hiddenPaths(list, readable, writable []string) ([]string, error) {
	var out []string
	for _, h := range list {
		if !filepath.IsAbs(h) {
			return nil, fmt.Errorf("sandbox: Hidden path %q is not absolute", h)
		}
		real, err := filepath.EvalSymlinks(h)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			pr.missing = append(pr.missing, fmt.Sprintf("cannot hide %s: %v", h, err))
			continue
		case real == "/":
			return nil, fmt.Errorf("sandbox: Hidden path %s is the root directory", h)
		}
		if !under(real, readable) && !slices.Contains(writable, real) {
			out = append(out, real)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	var kept []string
	for _, h := range slices.Compact(out) {
		if !under(h, kept) {
			kept = append(kept, h)
		}
	}
	return kept, nil
}

// addRedacted adds the copy of f without its credential lines to the
// plan, or f hidden whole when it is not a regular file or too large to
// copy; nothing when f does not exist, holds no credential line, is
// readable, or is hidden already.
func (pr *prepared) addRedacted(f string, readable, hidden []string) {
	real, err := filepath.EvalSymlinks(f)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		pr.missing = append(pr.missing, fmt.Sprintf("cannot redact %s: %v", f, err))
		return
	}
	if under(real, readable) || under(real, hidden) {
		return
	}
	b, err := readSmall(real, maxRedacted)
	switch {
	case errors.Is(err, errTooLarge):
		pr.pl.Hide = append(pr.pl.Hide, hideSpec{Path: real})
		pr.applied.Hidden = append(pr.applied.Hidden, real)
		return
	case err != nil:
		pr.missing = append(pr.missing, fmt.Sprintf("cannot redact %s: %v", f, err))
		return
	}
	out, removed := RedactNpmrc(b)
	if removed == 0 {
		// No credential line: the command may read it as it is, and
		// needs no mount for it.
		return
	}
	pr.pl.Hide = append(pr.pl.Hide, hideSpec{Path: real, Redacted: true, Content: out})
	pr.applied.Redacted = append(pr.applied.Redacted, real)
}

var errTooLarge = errors.New("too large, or not a regular file")

// readSmall reads the regular file path if it holds at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = errTooLarge
	}
	return b, err
}

// realPaths resolves paths that exist to their real paths.
func realPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// coverTarget is a hidden path, open, with what is shown through it.
type coverTarget struct {
	spec  *hideSpec
	fd    int // O_PATH, opened before anything covers it
	dir   bool
	mode  uint32
	shows []showMount
}

// showMount is a path shown through a hidden directory: a clone of its
// mount taken before the directory was covered.
type showMount struct {
	path  string
	clone int
	dir   bool
}

// hideSecrets covers each path of the plan's Hide list, in this
// process's mount namespace: one small tmpfs, made read-only before it is
// attached, holds an empty directory or file (or the redacted copy) for
// each, cloned over the path; what a hidden directory shows is moved back
// on top. A path that no longer exists is skipped; a path that became a
// symlink, or any mount that fails, fails the helper: nothing runs.
// Landlock, applied next, forbids the command every mount and unmount,
// and the capabilities to try are gone.
func hideSecrets(hide []hideSpec) error {
	targets, err := openTargets(hide)
	defer func() {
		for _, t := range targets {
			unix.Close(t.fd)
			for _, s := range t.shows {
				unix.Close(s.clone)
			}
		}
	}()
	if err != nil || len(targets) == 0 {
		return err
	}
	mnt, err := fillScratch(targets)
	if err != nil {
		return err
	}
	defer unix.Close(mnt)
	for i, t := range targets {
		if err := moveClone(mnt, strconv.Itoa(i), t.fd); err != nil {
			return fmt.Errorf("hiding %s: %w", t.spec.Path, err)
		}
		for _, s := range t.shows {
			to, err := openNoFollow(s.path)
			if err == nil {
				err = unix.MoveMount(s.clone, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
				unix.Close(to)
			}
			if err != nil {
				return fmt.Errorf("showing %s through %s: %w", s.path, t.spec.Path, err)
			}
		}
	}
	return nil
}

// openTargets opens each path to hide, and clones what each shows,
// before anything is covered.
func openTargets(hide []hideSpec) ([]coverTarget, error) {
	var out []coverTarget
	for i := range hide {
		spec := &hide[i]
		fd, err := openNoFollow(spec.Path)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("hiding %s: %w", spec.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return out, fmt.Errorf("hiding %s: %w", spec.Path, err)
		}
		t := coverTarget{spec: spec, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, mode: st.Mode & 0o777}
		out = append(out, t)
		if !t.dir {
			continue
		}
		for _, s := range spec.Show {
			sm, err := cloneShown(s)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("showing %s through %s: %w", s, spec.Path, err)
			}
			out[len(out)-1].shows = append(out[len(out)-1].shows, sm)
		}
	}
	return out, nil
}

// cloneShown clones the mount at path, as the command would see it.
func cloneShown(path string) (showMount, error) {
	at, err := openNoFollow(path)
	if err != nil {
		return showMount{}, err
	}
	defer unix.Close(at)
	var st unix.Stat_t
	if err := unix.Fstat(at, &st); err != nil {
		return showMount{}, err
	}
	fd, err := unix.OpenTree(at, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return showMount{}, fmt.Errorf("open_tree: %w", err)
	}
	return showMount{path: path, clone: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

// fillScratch makes a detached tmpfs holding, as entry i, what covers
// targets[i] (with the mount points of what it shows), and makes it
// read-only.
func fillScratch(targets []coverTarget) (int, error) {
	mnt, err := scratchTmpfs()
	if err != nil {
		return -1, fmt.Errorf("a tmpfs to hide files with: %w", err)
	}
	for i, t := range targets {
		name := strconv.Itoa(i)
		if err := makeCover(mnt, name, t); err != nil {
			unix.Close(mnt)
			return -1, fmt.Errorf("hiding %s: %w", t.spec.Path, err)
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(mnt)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return mnt, nil
}

// scratchTmpfs mounts a new tmpfs, detached: nothing sees it until a
// clone of it is moved somewhere.
func scratchTmpfs() (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "mode", "0755"); err != nil {
		return -1, fmt.Errorf("fsconfig: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	mnt, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mnt, nil
}

// makeCover makes name in the scratch tmpfs mnt: an empty directory with
// a mount point for each path t shows, a file holding t's Content, or a
// socket node. open(2) of a socket fails with ENXIO whatever the caller's
// rights, so that reading a hidden file fails as reading a file in a
// hidden directory does (ENOENT), rather than finding it empty; a
// connect(2) to it (a hidden ssh agent) is refused.
func makeCover(mnt int, name string, t coverTarget) error {
	if !t.dir && !t.spec.Redacted {
		return unix.Mknodat(mnt, name, unix.S_IFSOCK|t.mode, 0)
	}
	if !t.dir {
		fd, err := unix.Openat(mnt, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, t.mode)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		_, err = f.Write(t.spec.Content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if err := unix.Mkdirat(mnt, name, t.mode); err != nil {
		return err
	}
	for _, s := range t.shows {
		rel, err := filepath.Rel(t.spec.Path, s.path)
		if err != nil {
			return err
		}
		if err := mountPoint(mnt, filepath.Join(name, rel), s.dir); err != nil {
			return err
		}
	}
	return nil
}

// mountPoint makes rel below mnt, with the directories on its way: a
// directory, or an empty file.
func mountPoint(mnt int, rel string, dir bool) error {
	parent := filepath.Dir(rel)
	if parent != "." {
		if err := mountPoint(mnt, parent, true); err != nil {
			return err
		}
	}
	if dir {
		if err := unix.Mkdirat(mnt, rel, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		return nil
	}
	fd, err := unix.Openat(mnt, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// moveClone clones entry name of the scratch tmpfs mnt onto the path open
// at to.
func moveClone(mnt int, name string, to int) error {
	c, err := unix.OpenTree(mnt, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(c)
	if err := unix.MoveMount(c, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}
