package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// This file turns a policy's writable paths into the plan's, checked
// (resolve.go) and pinned: each goes to the helper with the device and
// inode seen here, and the helper opens it without following any symlink
// and checks them before it makes it writable (openChecked). A path
// swapped for a link, or for another directory, between Wrap and the
// command's start makes the start fail; it never makes something else
// writable.

// fileID is the device and inode of a writable path when Wrap saw it.
type fileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// addWritables adds p.Writable, p.Caches and the caches below p.CacheDir
// (own, from makeOwnCaches), resolved, to the plan. A refused path of
// Writable is an error; one of the caches is left out, and named in
// Applied.LeftOut, as is a cache of p.Caches that does not exist skipped.
// The own caches are pinned last, after pr.searchDirs, and are left out
// of the search for repositories: no one runs git in them unconfined.
func (pr *prepared) addWritables(p *Policy, own []ownPath) error {
	all, err := pr.resolveWritables(p, own)
	if err != nil {
		return err
	}
	// A link inside another writable path, by its real name, is refused
	// as well: a command could have made it there.
	reals := make([]string, len(all))
	for i, x := range all {
		reals[i] = x.real
	}
	for _, x := range all {
		if err := pr.pinWritable(x, reals); err != nil {
			return err
		}
	}
	return nil
}

// writable is one path addWritables resolved.
type writable struct {
	name, real string
	steps      []linkStep
	cache      bool
	own        string // the ownCache's dir, for one of CacheDir's
}

// resolveWritables resolves p.Writable, p.Caches and own, in that order,
// leaving out the caches that cannot be had (named in Applied.LeftOut).
func (pr *prepared) resolveWritables(p *Policy, own []ownPath) ([]writable, error) {
	names := append(slices.Clone(p.Writable), p.Caches...)
	for _, o := range own {
		names = append(names, o.path)
	}
	// A link in CacheDir itself is refused wherever CacheDir lies: only
	// a sandbox, or someone tampering with it, would put one there.
	r := newResolver(append(slices.Clone(names), p.CacheDir)...)
	var all []writable
	for i, w := range names {
		cache := i >= len(p.Writable)
		ownDir := ""
		if j := i - len(p.Writable) - len(p.Caches); j >= 0 {
			ownDir = own[j].dir
		}
		if cache && ownDir == "" && slices.Contains(names[:i], w) {
			continue
		}
		real, steps, err := r.resolve(w)
		var le *LinkError
		switch {
		case err == nil:
			all = append(all, writable{w, real, steps, cache, ownDir})
		case cache && errors.As(err, &le):
			pr.applied.LeftOut = append(pr.applied.LeftOut, le.Error())
		case ownDir != "":
			pr.applied.LeftOut = append(pr.applied.LeftOut, fmt.Sprintf("%s: %v", w, err))
		case cache && errors.Is(err, fs.ErrNotExist):
		case cache && !strings.HasPrefix(w, "/"):
			return nil, fmt.Errorf("sandbox: cache path %q is not absolute", w)
		case !strings.HasPrefix(w, "/"):
			return nil, fmt.Errorf("sandbox: writable path %q is not absolute", w)
		default:
			return nil, fmt.Errorf("sandbox: writable path: %w", err)
		}
	}
	return all, nil
}

// pinWritable adds x to the plan, unless one of the links its name
// crosses lies in another writable path (reals): then a cache is left
// out, and a writable path is an error.
func (pr *prepared) pinWritable(x writable, reals []string) error {
	for _, s := range x.steps {
		if !within(s.dir, reals) {
			continue
		}
		refused := (&LinkError{Path: x.name, Link: s.link, Target: s.target}).Error()
		if x.cache {
			pr.applied.LeftOut = append(pr.applied.LeftOut, refused)
			return nil
		}
		return errors.New("sandbox: writable path " + refused)
	}
	dir, err := pr.pl.pin(x.real)
	if err != nil {
		return fmt.Errorf("sandbox: writable path: %w", err)
	}
	switch {
	case x.own != "" && !dir:
		// Made as a directory; something else is there now.
		pr.pl.Files = slices.DeleteFunc(pr.pl.Files, func(f string) bool { return f == x.real })
		pr.applied.LeftOut = append(pr.applied.LeftOut, x.name+" is not a directory")
	case x.own != "":
		pr.ownDirs[x.own] = x.real
	case !x.cache:
		pr.rootDirs = len(pr.pl.Dirs)
		pr.searchDirs = len(pr.pl.Dirs)
	default:
		pr.searchDirs = len(pr.pl.Dirs)
	}
	return nil
}

// ownPath is one of the caches below Policy.CacheDir, by the path it is
// to have there.
type ownPath struct {
	dir  string // ownCache.dir
	path string // CacheDir/dir, as made
}

// makeOwnCaches makes p.CacheDir and a directory in it for each of
// ownCaches, mode 0700, without following a symlink where a sandbox
// could have made one (MkdirAll), and returns where they are; what
// cannot be made is named in Applied.LeftOut. A directory that exists
// already is left as it is: addWritables checks what it is.
func (pr *prepared) makeOwnCaches(p *Policy) []ownPath {
	pr.ownDirs = map[string]string{}
	if !filepath.IsAbs(p.CacheDir) {
		pr.applied.LeftOut = append(pr.applied.LeftOut, fmt.Sprintf("the sandbox's caches: CacheDir %q is not absolute", p.CacheDir))
		return nil
	}
	base, err := MkdirAll(p.CacheDir, 0o700)
	if err != nil {
		pr.applied.LeftOut = append(pr.applied.LeftOut, fmt.Sprintf("the sandbox's caches: %v", err))
		return nil
	}
	var out []ownPath
	for _, c := range ownCaches {
		// The path as the policy names it, so that a link in its place
		// is named by it; Mkdir does not follow a link at its last
		// component.
		path := filepath.Join(filepath.Clean(p.CacheDir), c.dir)
		if err := os.Mkdir(filepath.Join(base, c.dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			pr.applied.LeftOut = append(pr.applied.LeftOut, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		out = append(out, ownPath{dir: c.dir, path: path})
	}
	return out
}

// pin adds real, a path without symlinks, to the plan's writable
// directories or files, with its device and inode; it reports whether
// it is a directory.
func (pl *plan) pin(real string) (dir bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(real, &st); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: real, Err: err}
	}
	if pl.IDs == nil {
		pl.IDs = map[string]fileID{}
	}
	pl.IDs[real] = fileID{Dev: st.Dev, Ino: st.Ino}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if !slices.Contains(pl.Dirs, real) {
			pl.Dirs = append(pl.Dirs, real)
		}
		return true, nil
	case unix.S_IFLNK:
		return false, fmt.Errorf("%s is a symlink", real)
	}
	if !slices.Contains(pl.Files, real) {
		pl.Files = append(pl.Files, real)
	}
	return false, nil
}

// openChecked opens path, which must contain no symlink, as an O_PATH
// descriptor, and checks that it is the file the host pinned.
func (pl *plan) openChecked(path string) (int, error) {
	want, ok := pl.IDs[path]
	if !ok {
		return -1, fmt.Errorf("%s: not pinned by the host", path)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return -1, fmt.Errorf("%s: became a symlink, or one is on its way", path)
		}
		return -1, &fs.PathError{Op: "openat2", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Dev != want.Dev || st.Ino != want.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: replaced since the sandbox was planned", path)
	}
	return fd, nil
}

// openNoFollow opens path, which must contain no symlink, as an O_PATH
// descriptor: a .git that became a link is not made read-only somewhere
// else, and its start fails instead.
func openNoFollow(path string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
	if errors.Is(err, syscall.ELOOP) {
		return -1, fmt.Errorf("%s: became a symlink, or one is on its way", path)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "openat2", Path: path, Err: err}
	}
	return fd, nil
}

// Landlock rights of a writable directory and of a writable file, as
// go-landlock's RWDirs and RWFiles grant them (before the ruleset's
// handled rights are applied).
const (
	rwDirRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir |
		llsyscall.AccessFSWriteFile | llsyscall.AccessFSRemoveDir | llsyscall.AccessFSRemoveFile |
		llsyscall.AccessFSMakeChar | llsyscall.AccessFSMakeDir | llsyscall.AccessFSMakeReg |
		llsyscall.AccessFSMakeSock | llsyscall.AccessFSMakeFifo | llsyscall.AccessFSMakeBlock |
		llsyscall.AccessFSMakeSym | llsyscall.AccessFSTruncate
	rwFileRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile | llsyscall.AccessFSWriteFile | llsyscall.AccessFSTruncate
)

// addWritableRules adds to the ruleset the plan's writable directories
// (with refer, where the ABI has it) and files, each from a descriptor
// checked by openChecked. handled is the ruleset's handled rights.
func (pl *plan) addWritableRules(rulesetFD int, handled uint64) error {
	dirRights := uint64(rwDirRights)
	if pl.ABI >= 2 {
		// Renames and links between writable directories; a rename out
		// of them still needs write rights at the destination.
		dirRights |= llsyscall.AccessFSRefer
	}
	add := func(path string, rights uint64) error {
		fd, err := pl.openChecked(path)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		attr := llsyscall.PathBeneathAttr{AllowedAccess: rights & handled, ParentFd: fd}
		if err := llsyscall.LandlockAddPathBeneathRule(rulesetFD, &attr, 0); err != nil {
			return fmt.Errorf("adding %s: %w", path, err)
		}
		return nil
	}
	for _, d := range pl.Dirs {
		rights := dirRights
		if pl.onWayToHidden(d) {
			// It would pass reading on to a path Landlock hides; its
			// entries get it instead (addHideRules).
			rights &^= readRights
		}
		if err := add(d, rights); err != nil {
			return err
		}
	}
	for _, f := range pl.Files {
		if err := add(f, rwFileRights); err != nil {
			return err
		}
	}
	return nil
}
