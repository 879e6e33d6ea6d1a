//go:build linux

package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/internal/proc/owner"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"golang.org/x/sys/unix"
)

// EmptyTimeout bounds the wait for killed members to leave a cgroup:
// SIGKILL takes effect in microseconds unless a process is stuck in the
// kernel (uninterruptible I/O), and then waiting longer rarely helps.
const EmptyTimeout = 5 * time.Second

// New makes a cgroup for the calling process under parent ("" means the
// calling process's own cgroup), named as the package doc says, after
// removing the stale cgroups of dead owners under the same parent. It
// fails when the tree is not writable or lacks cgroup.kill (Linux < 5.14).
func New(parent, kind string) (string, error) {
	if parent == "" {
		var err error
		if parent, err = Own(); err != nil {
			return "", err
		}
	}
	CleanStale(parent)
	name, err := owner.Prefix(kind)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(parent, name+randhex.String(4))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = unix.Rmdir(dir)
		return "", fmt.Errorf("no cgroup.kill (Linux < 5.14?): %w", err)
	}
	made.Lock()
	made.dirs[dir] = struct{}{}
	made.Unlock()
	// The owner's prefix without the kind: one watchdog for every kind.
	if own, err := owner.Prefix(""); err == nil {
		watch(parent, own[:len(own)-1])
	}
	return dir, nil
}

// made holds the cgroups New made that are not removed yet, for RemoveOwn.
var made = struct {
	sync.Mutex
	dirs map[string]struct{}
}{dirs: make(map[string]struct{})}

// RemoveOwn kills every cgroup this process made with New and has not
// removed, with all their members, and removes them, waiting at most
// timeout for the members to leave. It is for an exit that cannot wait
// for the normal shutdown; what it cannot remove in time, the next
// acpterm removes as stale.
func RemoveOwn(timeout time.Duration) {
	made.Lock()
	dirs := make([]string, 0, len(made.dirs))
	for dir := range made.dirs {
		dirs = append(dirs, dir)
	}
	made.Unlock()
	for _, dir := range dirs {
		_ = Kill(dir)
	}
	deadline := time.Now().Add(timeout)
	for _, dir := range dirs {
		_ = removeTree(dir, deadline)
	}
}

// Start starts cmd directly inside the cgroup dir (clone3 with
// CLONE_INTO_CGROUP), so that not even the command's first fork happens
// outside it. It keeps the rest of cmd.SysProcAttr.
func Start(cmd *exec.Cmd, dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	err = cmd.Start()
	// The fd is closed on return: leave no stale number in cmd.
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = false, 0
	return err
}

// StartNew starts cmd in a new cgroup of kind (New) when the tree is
// writable, else as it is, and returns the cgroup ("" for none). Where the
// kernel refuses a start into the cgroup but may take a plain one (clone3
// filtered by seccomp, a parent with controllers enabled) it tries once
// more without it and says so to logf, naming cmd as what. The retry runs
// a copy of cmd, since an exec.Cmd starts once; one made by
// CommandContext (Cancel set) cannot be copied, and fails instead.
func StartNew(cmd *exec.Cmd, kind, what string, logf func(format string, args ...any)) (string, error) {
	dir, err := New("", kind)
	if err != nil {
		// The usual case on a desktop: no writable tree. The process
		// group is the fallback, not worth a log line each time.
		return "", cmd.Start()
	}
	if err = Start(cmd, dir); err == nil {
		return dir, nil
	}
	_ = unix.Rmdir(dir)
	if !refused(err) || cmd.Cancel != nil {
		return "", err
	}
	logf("starting %s in cgroup %s: %v; using its process group only", what, dir, err)
	*cmd = exec.Cmd{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles,
		SysProcAttr: cmd.SysProcAttr, WaitDelay: cmd.WaitDelay,
	}
	return "", cmd.Start()
}

// refused reports whether a start inside a cgroup failed in a way that a
// start without one may not.
func refused(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EPERM, unix.EOPNOTSUPP, unix.EBUSY, unix.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Kill kills every process in the cgroup dir and its descendants at once
// (cgroup.kill). Members leave asynchronously; Remove waits for them.
func Kill(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// Signal sends sig to each process listed in dir's cgroup.procs (not to
// those of child cgroups): the polite step before Kill, which gives
// descendants that called setsid the same chance to clean up as the
// process group.
func Signal(dir string, sig syscall.Signal) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, sig)
		}
	}
}

// Remove removes the cgroup dir, whose members were killed. They leave
// asynchronously, so while rmdir fails with EBUSY it waits, at most
// EmptyTimeout, for cgroup.events to say the cgroup is no longer
// populated. A cgroup that is busy because it has child cgroups fails at
// once with EBUSY.
func Remove(dir string) error {
	return remove(dir, time.Now().Add(EmptyTimeout))
}

// RemoveTree kills everything in the cgroup dir and below (cgroup.kill
// covers descendants) and removes it with its child cgroups, bottom up,
// within EmptyTimeout. A member running as root can make child cgroups of
// its own, so a cgroup handed to untrusted code is removed this way.
func RemoveTree(dir string) error {
	_ = Kill(dir) // fails only when dir is gone, which removeTree sees
	return removeTree(dir, time.Now().Add(EmptyTimeout))
}

func removeTree(dir string, deadline time.Time) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name()), deadline); err != nil {
				return err
			}
		}
	}
	return remove(dir, deadline)
}

func remove(dir string, deadline time.Time) error {
	empty := false // cgroup.events said unpopulated before this rmdir
	for {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			made.Lock()
			delete(made.dirs, dir)
			made.Unlock()
			return nil
		}
		if err != unix.EBUSY || empty {
			// Busy without members means child cgroups, which waiting
			// will not remove.
			return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		waited, err := waitUnpopulated(dir, deadline)
		if err != nil {
			return &fs.PathError{Op: "rmdir", Path: dir, Err: fmt.Errorf("%w (%w)", unix.EBUSY, err)}
		}
		empty = !waited
	}
}

// waitUnpopulated waits until cgroup dir has no process in it or deadline
// passes, and reports whether it had any to wait for. The kernel signals a
// change of cgroup.events to poll(2) as POLLPRI, so this sleeps until the
// members are gone rather than polling.
func waitUnpopulated(dir string, deadline time.Time) (waited bool, err error) {
	fd, err := unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return true, nil // removed meanwhile: let rmdir say so
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	for {
		// Reading arms the notification: poll reports only changes made
		// after the last read.
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			return waited, err
		}
		busy, ok := populated(buf[:n])
		if !ok {
			return waited, fmt.Errorf("no populated key in %q", buf[:n])
		}
		if !busy {
			return waited, nil
		}
		waited = true
		left := time.Until(deadline)
		if left <= 0 {
			return waited, errors.New("members still running after " + EmptyTimeout.String())
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil && err != unix.EINTR {
			return waited, err
		}
	}
}

// populated reads the "populated" key of a cgroup.events file: 1 while
// the cgroup or any of its descendants has a live process.
func populated(events []byte) (busy, ok bool) {
	for line := range strings.SplitSeq(string(events), "\n") {
		if v, found := strings.CutPrefix(line, "populated "); found {
			return strings.TrimSpace(v) != "0", true
		}
	}
	return false, false
}

// Populated reports whether the cgroup dir or a descendant of it has a
// live process.
func Populated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	busy, ok := populated(b)
	if !ok {
		return false, fmt.Errorf("no populated key in %s/cgroup.events", dir)
	}
	return busy, nil
}

// CleanStale kills and removes the cgroups under parent that belong to
// dead owners (see the package doc) and returns the directories it
// removed. Every stale cgroup is killed before any is waited for, so n of
// them take one EmptyTimeout at most, not n.
func CleanStale(parent string) []string {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var stale []string
	for _, e := range ents {
		if e.IsDir() && Stale(e.Name()) {
			dir := filepath.Join(parent, e.Name())
			_ = Kill(dir)
			stale = append(stale, dir)
		}
	}
	deadline := time.Now().Add(EmptyTimeout)
	var removed []string
	for _, dir := range stale {
		if removeTree(dir, deadline) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// Stale reports whether name is a cgroup this package makes whose owner
// is dead (see package owner, which names it).
func Stale(name string) bool { return owner.Dead(name) }

// Own finds the directory of the calling process's cgroup in the cgroup v2
// hierarchy.
func Own() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
			break
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
	}
	mnt, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	rel = strings.TrimSuffix(rel, " (deleted)")
	if root != "/" {
		r, ok := strings.CutPrefix(rel, root)
		if !ok {
			return "", fmt.Errorf("cgroup %s is outside the mounted root %s", rel, root)
		}
		rel = r
	}
	return filepath.Join(mnt, rel), nil
}

// cgroup2Mount returns the mount point and root of the cgroup2 hierarchy.
func cgroup2Mount() (mountPoint, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional…] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) == 0 || fs[0] != "cgroup2" {
			continue
		}
		fs := strings.Fields(pre)
		if len(fs) < 5 {
			continue
		}
		return unescapeMount(fs[4]), unescapeMount(fs[3]), nil
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", errors.New("no cgroup2 mount")
}

// unescapeMount undoes the octal escapes (\040 for space, …) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
