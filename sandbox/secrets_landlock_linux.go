package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Hiding secrets with Landlock, where no mount namespace can be had (no
// unprivileged user namespaces). Landlock only grants: once reading files
// is a handled right, whatever no rule grants is unreadable. So instead
// of one read rule on "/", the helper grants reading on each entry of
// each directory on the way to a hidden path, except the entry that
// leads on to it, and on the paths shown through a hidden directory.
// The directories on the way get READ_DIR alone (given on "/", which
// every directory inherits): their names, and those of the entries of a
// hidden directory, can be listed, and nothing below a hidden path can
// be read, executed or mapped.
//
// Rules attach to inodes, and the helper picks the entries by device and
// inode, not by name: a hidden directory renamed after the listing keeps
// no rule, an entry that is a hard link to a hidden file gets none, and
// a symlink gets none (Landlock checks the file a link leads to, at its
// real place). A rename or link that would move a hidden file below an
// entry that may be read fails (Landlock's refer check, EXDEV). What is
// created later in a directory on the way has no rule and cannot be read.

// maxLandlockEntries caps the entries of one directory on the way to a
// hidden path that the helper gives a rule each: a larger directory
// fails the start, rather than the helper running out of time.
const maxLandlockEntries = 1 << 16

// roRights are the rights a read-only entry is given, as go-landlock's
// RODirs gives "/" when nothing is hidden; a file gets those of them that
// apply to files.
const (
	roDirRights  = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir
	roFileRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile
	// readRights are what a writable directory on the way to a hidden
	// path loses: it would pass them on to the hidden path.
	readRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile
)

// hideByLandlock moves the plan's Hide list, which needs a mount
// namespace that cannot be had, to Landlock's rules (plan.LLHide and
// LLShow), and reports whether it did. It needs a filesystem ruleset.
// A redacted file is hidden whole, which is degraded, not missing. A
// hidden unix socket stays missing: Landlock does not check connect(2)
// to a socket before ABI 9, unless seccomp forbids such sockets.
func (pr *prepared) hideByLandlock(nsErr error) bool {
	if !pr.pl.FS || pr.pl.ABI == 0 || len(pr.pl.Hide) == 0 {
		return false
	}
	var uncovered, redacted []string
	sockets := pr.pl.ABI >= 9 || pr.pl.NoUnix
	for _, h := range pr.pl.Hide {
		var st unix.Stat_t
		if err := unix.Lstat(h.Path, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK && !sockets {
			uncovered = append(uncovered, h.Path)
			continue
		}
		if h.Redacted {
			redacted = append(redacted, h.Path)
		}
		pr.pl.LLHide = append(pr.pl.LLHide, h.Path)
		for _, s := range h.Show {
			if !slices.Contains(pr.pl.LLShow, s) {
				pr.pl.LLShow = append(pr.pl.LLShow, s)
			}
		}
	}
	if len(uncovered) > 0 {
		pr.missing = append(pr.missing, fmt.Sprintf("no mount namespace (%v): cannot hide the unix socket %s (Landlock does not check connect(2) on this kernel; --readable PATH, Policy.Readable, lets a path through, --ssh-agent an ssh agent's)", nsErr, someOf(uncovered)))
	}
	if len(redacted) > 0 {
		pr.degraded = append(pr.degraded, fmt.Sprintf("no mount namespace (%v): cannot show %s without its credential lines: hidden whole, the command cannot read it at all", nsErr, someOf(redacted)))
	}
	pr.applied.Hidden = slices.DeleteFunc(append(pr.applied.Hidden, redacted...), func(h string) bool { return slices.Contains(uncovered, h) })
	pr.applied.Redacted = nil
	pr.applied.HiddenByLandlock = len(pr.pl.LLHide) > 0
	return true
}

// onWayToHidden reports whether dir is a directory on the way to a path
// Landlock hides (a strict ancestor of one).
func (pl *plan) onWayToHidden(dir string) bool {
	for _, h := range pl.LLHide {
		if h != dir && under(h, []string{dir}) {
			return true
		}
	}
	return false
}

// fileKey is a file's device and inode.
type fileKey struct{ dev, ino uint64 }

// addHideRules adds the rules that stand for the read rule on "/" when
// pl.LLHide is set: READ_DIR on "/", read rights on every entry of every
// directory on the way to a hidden path but the ones on the way or
// hidden, and on the shown paths. handled is the ruleset's handled
// rights. A directory on the way that cannot be opened, or an entry that
// cannot be given its rule, fails: the command would miss more than it
// should, or the secret would be readable.
func (pl *plan) addHideRules(rulesetFD int, handled uint64) error {
	dirRights, fileRights := uint64(roDirRights), uint64(roFileRights)
	if pl.ResolveUnix {
		dirRights |= llsyscall.AccessFSResolveUnix
	}
	ways, skip, err := pl.hiddenInodes()
	if err != nil {
		return err
	}
	root, err := openNoFollow("/")
	if err != nil {
		return err
	}
	err = addRule(rulesetFD, root, llsyscall.AccessFSReadDir&handled)
	unix.Close(root)
	if err != nil {
		return fmt.Errorf("adding /: %w", err)
	}
	for _, dir := range ways {
		if err := grantEntries(rulesetFD, dir, skip, dirRights&handled, fileRights&handled); err != nil {
			return err
		}
	}
	for _, s := range pl.LLShow {
		fd, err := openNoFollow(s)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("showing %s: %w", s, err)
		}
		err = addTyped(rulesetFD, fd, dirRights&handled, fileRights&handled)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("showing %s: %w", s, err)
		}
	}
	return nil
}

// hiddenInodes returns the directories on the way to the hidden paths
// (outermost first) and the inodes of those and of the hidden paths,
// which no entry rule may name. A hidden path gone since Wrap is left
// out; one that became a symlink, or lies past one, fails.
func (pl *plan) hiddenInodes() (ways []string, skip map[fileKey]bool, err error) {
	skip = map[fileKey]bool{}
	for _, h := range pl.LLHide {
		for p := h; ; p = filepath.Dir(p) {
			fd, err := openNoFollow(p)
			if errors.Is(err, unix.ENOENT) && p == h {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("hiding %s: %w", h, err)
			}
			var st unix.Stat_t
			err = unix.Fstat(fd, &st)
			unix.Close(fd)
			if err != nil {
				return nil, nil, fmt.Errorf("hiding %s: %w", h, err)
			}
			skip[fileKey{st.Dev, st.Ino}] = true
			if p == "/" {
				break
			}
			if d := filepath.Dir(p); !slices.Contains(ways, d) {
				ways = append(ways, d)
			}
		}
	}
	slices.SortFunc(ways, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	return ways, skip, nil
}

// grantEntries gives each entry of dir that is not in skip, nor a
// symlink, the read rights of its kind.
func grantEntries(rulesetFD int, dir string, skip map[fileKey]bool, dirRights, fileRights uint64) error {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	dfd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
	if err != nil {
		return fmt.Errorf("hiding secrets: listing %s: %w", dir, err)
	}
	d := os.NewFile(uintptr(dfd), dir)
	defer d.Close()
	names, err := d.Readdirnames(maxLandlockEntries + 1)
	if err != nil {
		return fmt.Errorf("hiding secrets: listing %s: %w", dir, err)
	}
	if len(names) > maxLandlockEntries {
		return fmt.Errorf("hiding secrets: %s has more than %d entries", dir, maxLandlockEntries)
	}
	for _, name := range names {
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing: nothing to grant
		}
		if err != nil {
			return fmt.Errorf("hiding secrets: %s: %w", filepath.Join(dir, name), err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK && !skip[fileKey{st.Dev, st.Ino}] {
			rights := fileRights
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				rights = dirRights
			}
			err = addRule(rulesetFD, fd, rights)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("hiding secrets: %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// addTyped adds a rule for the file open at fd: dirRights for a
// directory, fileRights for anything else.
func addTyped(rulesetFD, fd int, dirRights, fileRights uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return addRule(rulesetFD, fd, dirRights)
	}
	return addRule(rulesetFD, fd, fileRights)
}

func addRule(rulesetFD, fd int, rights uint64) error {
	if rights == 0 {
		return nil
	}
	attr := llsyscall.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}
	return llsyscall.LandlockAddPathBeneathRule(rulesetFD, &attr, 0)
}
