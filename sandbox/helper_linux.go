package sandbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockConfigs are go-landlock's presets by ABI version (index 0 is
// ABI 1): each handles every right its version knows.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// helperMain is the sandbox helper: it sets up what the plan says in this
// process and execs the command, or with pl.Serve becomes a spawner's
// helper. It never returns.
func helperMain(s string) {
	// Landlock, no_new_privs and capabilities are per-thread until exec,
	// and exec (or fork) keeps the calling thread's: everything happens on
	// this thread, which is never unlocked. No other thread needs
	// restricting: exec ends them all, and a spawner forks only from this
	// one. (go-landlock's Restrict would reach every thread with psx or
	// TSYNC, which costs time and buys nothing here.)
	runtime.LockOSThread()
	var pl plan
	if err := json.Unmarshal([]byte(s), &pl); err != nil {
		fail(ExitSetupFailed, "bad plan from the host: %v", err)
	}
	if pl.Serve {
		serveMain(&pl) // does not return
	}
	if code, err := setupSelf(&pl); err != nil {
		fail(code, "%v", err)
	}
	if pl.Probe {
		os.Exit(0)
	}
	env := withoutEnv(os.Environ(), planEnv)
	err := syscall.Exec(pl.Path, os.Args, env)
	if errors.Is(err, syscall.ENOENT) {
		fail(ExitNotFound, "%s: %v", pl.Path, err)
	}
	fail(ExitCannotExec, "%s: %v", pl.Path, err)
}

// setupSelf applies the plan to this process and thread: the loopback,
// the read-only mounts, the capabilities and Landlock. On failure it
// returns the exit status the helper should end with.
func setupSelf(pl *plan) (int, error) {
	if pl.Loopback {
		if err := loopbackUp(); err != nil {
			return ExitSetupFailed, fmt.Errorf("bringing up the loopback interface: %w", err)
		}
	}
	if pl.ProxyFD > 0 {
		if err := openProxyListener(pl); err != nil {
			return ExitSetupFailed, fmt.Errorf("opening the proxy's listener: %w", err)
		}
	}
	if pl.Probe {
		if err := probeMount(); err != nil {
			return ExitSetupFailed, fmt.Errorf("mount namespace: %w", err)
		}
		return 0, nil
	}
	if err := setupMounts(pl); err != nil {
		return ExitSetupFailed, err
	}
	if pl.DropCaps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return ExitSetupFailed, fmt.Errorf("dropping capabilities: %w", err)
		}
	}
	if pl.FS && os.Geteuid() == 0 {
		if err := limitRootCaps(); err != nil {
			return ExitSetupFailed, fmt.Errorf("limiting a root command's capabilities: %w", err)
		}
	}
	if pl.Serve {
		if err := guardSpawner(); err != nil {
			return ExitSetupFailed, err
		}
	}
	if pl.ABI > 0 {
		if err := restrictThread(pl); err != nil {
			return ExitSetupFailed, fmt.Errorf("landlock: %w", err)
		}
	}
	if pl.NoUnix {
		// Last: the helper itself needs no new socket from here on (a
		// spawner's is open already).
		if err := denyUnixSockets(); err != nil {
			return ExitSetupFailed, fmt.Errorf("seccomp: %w", err)
		}
	}
	return 0, nil
}

// restrictThread enforces the plan's Landlock ruleset on this thread.
// The config is exact, not best effort: Wrap chose pl.ABI from this
// kernel, and a ruleset that cannot be had must stop the command.
func restrictThread(pl *plan) error {
	if pl.ABI > len(landlockConfigs) {
		return fmt.Errorf("ABI %d is unknown to this build", pl.ABI)
	}
	preset := landlockConfigs[pl.ABI-1]
	var cfg landlock.Config
	var rules []landlock.Rule
	if pl.FS {
		cfg.HandledAccessFS = preset.HandledAccessFS
		ro := landlock.RODirs("/")
		if pl.ResolveUnix {
			ro = ro.WithResolveUnix()
		}
		if len(pl.LLHide) == 0 {
			rules = append(rules, ro)
		}
		// The writable paths are added below, from descriptors.
		if pl.PrivatePTS {
			// The devpts mounted for the command (rules name the mount
			// now in place) and the multiplexer that opens its terminals;
			// a terminal needs ioctls (termios, window size), which
			// Landlock ABI 5 checks on devices.
			rights := landlock.AccessFSSet(llsyscall.AccessFSReadFile | llsyscall.AccessFSWriteFile)
			if pl.ABI >= 5 {
				rights |= llsyscall.AccessFSIoctlDev
			}
			rules = append(rules, landlock.PathAccess(rights, ptsDir, ptmxPath))
			if _, err := os.Stat(ttyPath); err == nil && pl.DevTTY {
				// A command's own terminal, for password prompts: safe
				// only where the helper has no controlling terminal,
				// so that none but a pty of its own can be reached.
				rules = append(rules, landlock.PathAccess(rights, ttyPath))
			}
		}
	}
	if pl.Scoped {
		cfg.Scoped = preset.Scoped
	}
	if pl.TCPDeny {
		cfg.HandledAccessNet = preset.HandledAccessNet
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("nothing to enforce")
	}
	defer unix.Close(fd)
	if len(pl.LLHide) > 0 {
		// Read rights everywhere but below the hidden paths, instead of
		// ro (secrets_landlock_linux.go).
		if err := pl.addHideRules(fd, uint64(cfg.HandledAccessFS)); err != nil {
			return err
		}
	}
	if pl.FS {
		if err := pl.addWritableRules(fd, uint64(cfg.HandledAccessFS)); err != nil {
			return err
		}
	}
	// no_new_privs: setuid binaries and file capabilities gain nothing,
	// and Landlock requires it of callers without CAP_SYS_ADMIN.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return llsyscall.LandlockRestrictSelf(fd, flags)
}

// rootCaps are the capabilities a root command keeps: those that act on
// files, ids and signals, which Landlock, the read-only mounts and
// Landlock's scoping check all the same, and which root's programs (tar,
// package managers, servers on low ports) expect.
var rootCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID,
	unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE,
}

// limitRootCaps keeps a root command to rootCaps. Root execs with every
// capability of its bounding and inheritable sets, and the rest reach
// past Landlock, which checks paths and not mounts: CAP_SYS_ADMIN over the
// mount namespace (the user namespace's own, so root has it there) lets
// mount_setattr(2) clear the read-only flag of a .git mount, or
// open_tree(2) clone the workspace without it; without a user namespace
// (read-only, network allowed) root would keep CAP_SYS_MODULE and the
// like over the host. The bounding set is per thread, like the rest: this
// one, which execs or forks every command.
func limitRootCaps() error {
	var keep uint64
	for _, c := range rootCaps {
		keep |= 1 << c
	}
	for c := uintptr(0); c < 64; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0); err != nil {
			break // EINVAL: past the last capability this kernel knows
		}
		if keep&(1<<c) == 0 {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
				return fmt.Errorf("bounding set: %w", err)
			}
		}
	}
	// Root's exec also grants what is in the inheritable set (and the
	// ambient set, a subset of it, which this shrinks with it).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable &= uint32(keep)
	data[1].Inheritable &= uint32(keep >> 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// loopbackUp brings up lo, which a new network namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// bindReadOnly covers path with a read-only bind mount of itself, in this
// process's mount namespace. The namespace belongs to a new user
// namespace, so its mounts are slaves of the host's and nothing made here
// propagates back. Landlock then forbids the command to unmount it.
func bindReadOnly(path string) error {
	at, err := openNoFollow(path)
	if err != nil {
		return err
	}
	defer unix.Close(at)
	fd, err := unix.OpenTree(at, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	// mount_setattr changes only the flag asked for, where a classic
	// MS_REMOUNT would have to repeat every locked flag of the mount.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(fd, "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// readOnlyElsewhere makes every mount of this process's mount namespace
// read-only except the writable paths. Each writable path is cloned
// first, with its mounts as the host has them, then the whole tree is
// made read-only and the clones are put back over their paths: what the
// host had read-only stays so, and nothing is made writable that was not.
// Device nodes need no clone: a read-only mount does not stop writes to a
// device. Like bindReadOnly, nothing here propagates to the host.
func readOnlyElsewhere(pl *plan) error {
	paths := make([]string, 0, len(pl.Dirs)+len(pl.Files))
	paths = append(paths, pl.Dirs...)
	for _, f := range pl.Files {
		if fi, err := os.Stat(f); err == nil && fi.Mode()&os.ModeDevice != 0 {
			continue
		}
		paths = append(paths, f)
	}
	// Parents before children, so that a child's clone lands on top of
	// its parent's; a path met twice is cloned once.
	slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	paths = slices.Compact(paths)
	// Each path is opened checked (openChecked), to be cloned, and again
	// to put the clone over it: by then a parent's clone may be in place,
	// and the clone of a path below it must go on top of that one.
	clones := make([]int, 0, len(paths))
	ats := make([]int, 0, len(paths))
	defer func() {
		for _, fd := range append(clones, ats...) {
			unix.Close(fd)
		}
	}()
	for _, p := range paths {
		at, err := pl.openChecked(p)
		if err != nil {
			return err
		}
		ats = append(ats, at)
		fd, err := unix.OpenTree(at, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("open_tree %s: %w", p, err)
		}
		clones = append(clones, fd)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr /: %w", err)
	}
	for i, p := range paths {
		to, err := pl.openChecked(p)
		if err != nil {
			return err
		}
		err = unix.MoveMount(clones[i], "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		unix.Close(to)
		if err != nil {
			return fmt.Errorf("move_mount %s: %w", p, err)
		}
	}
	return nil
}

const (
	ptsDir   = "/dev/pts"
	ptmxPath = "/dev/ptmx"
	ttyPath  = "/dev/tty"
)

// ptysAvailable reports whether this system has the usual devpts layout
// (a /dev/pts directory and a /dev/ptmx device) that privatePTS covers.
func ptysAvailable() bool {
	d, err1 := os.Stat(ptsDir)
	m, err2 := os.Stat(ptmxPath)
	return err1 == nil && err2 == nil && d.IsDir() && m.Mode()&os.ModeCharDevice != 0
}

// privatePTS mounts a new devpts instance over /dev/pts. Opening the
// /dev/ptmx device finds the instance mounted at pts beside it, so the
// command's terminals come from this one; the host's, the user's among
// them, are hidden under it. Mounting devpts is allowed in a user
// namespace.
func privatePTS() error {
	return unix.Mount("devpts", ptsDir, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
}

// probeMount checks that this process may make mounts.
func probeMount() error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	return unix.Close(fd)
}

// setupMounts makes the plan's mounts in this process's mount namespace:
// everything read-only but the writable paths, a devpts of its own, the
// read-only .git and protected paths, the hidden ones.
func setupMounts(pl *plan) error {
	if pl.ReadOnlyAll {
		if err := readOnlyElsewhere(pl); err != nil {
			return fmt.Errorf("mounting all but the writable paths read-only: %w", err)
		}
	}
	if pl.PrivatePTS {
		if err := privatePTS(); err != nil {
			return fmt.Errorf("mounting a devpts of its own: %w", err)
		}
	}
	for _, p := range pl.ReadOnly {
		if err := bindReadOnly(p); err != nil {
			return fmt.Errorf("making %s read-only: %w", p, err)
		}
	}
	if err := hideSecrets(pl.Hide); err != nil {
		return err
	}
	if pl.ReadOnlyAll || len(pl.ReadOnly) > 0 || len(pl.Hide) > 0 {
		// The working directory may lie under a path just covered by a
		// mount; entering it again by name lands on the new one.
		if wd, err := syscall.Getwd(); err == nil {
			if err := syscall.Chdir(wd); err != nil {
				return fmt.Errorf("re-entering %s: %w", wd, err)
			}
		}
	}
	return nil
}
