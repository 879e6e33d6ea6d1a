package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/owner"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// plan is what the helper does, decided by Wrap and passed in planEnv.
// The helper enforces exactly this and fails if it cannot: every
// best-effort decision is Wrap's.
type plan struct {
	Path        string     `json:"path,omitempty"`        // the command to exec
	ABI         int        `json:"abi,omitempty"`         // Landlock ABI the ruleset is written for; 0: no Landlock
	FS          bool       `json:"fs,omitempty"`          // confine filesystem access
	Dirs        []string   `json:"dirs,omitempty"`        // writable directories
	Files       []string   `json:"files,omitempty"`       // writable files
	ResolveUnix bool       `json:"resolveUnix,omitempty"` // allow pathname unix sockets (ABI 9+)
	Scoped      bool       `json:"scoped,omitempty"`      // scope signals and abstract unix sockets
	TCPDeny     bool       `json:"tcpDeny,omitempty"`     // Landlock denies TCP connect and bind
	Loopback    bool       `json:"loopback,omitempty"`    // bring up lo in the new network namespace
	ReadOnly    []string   `json:"readOnly,omitempty"`    // paths to mount read-only
	ReadOnlyAll bool       `json:"readOnlyAll,omitempty"` // mount everything but Dirs and Files read-only
	NoUnix      bool       `json:"noUnix,omitempty"`      // seccomp: no unix sockets that can address a path
	PrivatePTS  bool       `json:"privatePTS,omitempty"`  // mount a devpts of its own; ptys may be opened
	DevTTY      bool       `json:"devTTY,omitempty"`      // /dev/tty may be opened: the helper has no controlling terminal
	Hide        []hideSpec `json:"hide,omitempty"`        // paths to hide (secrets_linux.go)
	LLHide      []string   `json:"llHide,omitempty"`      // paths Landlock hides, without a mount namespace (secrets_landlock_linux.go)
	LLShow      []string   `json:"llShow,omitempty"`      // paths below them that stay readable
	DropCaps    bool       `json:"dropCaps,omitempty"`    // clear the ambient capabilities before exec
	Probe       bool       `json:"probe,omitempty"`       // set up namespaces and exit 0
	Serve       bool       `json:"serve,omitempty"`       // be a Spawner's helper (fd 3 is its socket)
	ProxyFD     int        `json:"proxyFD,omitempty"`     // send a listener on ProxyPort to this socket (proxy_linux.go)
	ProxyPort   int        `json:"proxyPort,omitempty"`
	Forwards    []string   `json:"forwards,omitempty"` // loopback ip:port to listen on too, sent after the proxy's

	// IDs are the device and inode of each of Dirs and Files, as Wrap
	// saw them (writable_linux.go).
	IDs map[string]fileID `json:"ids,omitempty"`
}

// nullDevices are writable in every confined mode: programs open them for
// writing all the time and they carry nothing anywhere. /dev/tty is not
// among them: it is the user's terminal, and output written there would
// bypass the host's sanitizer.
var nullDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// kernelABI returns the Landlock ABI to write rules for: the kernel's,
// capped at what go-landlock knows. Tests replace it to simulate kernels.
var kernelABI = func() int {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return min(v, len(landlockConfigs))
}

// prepared is a policy worked out for the running machine.
type prepared struct {
	pl      plan
	applied Applied
	missing []string // what the policy needs and this kernel lacks
	// degraded is what Policy.WithoutMountNamespace lets go without a
	// mount namespace; it is reported like missing, but does not fail.
	degraded []string
	nsFlags  uintptr // namespaces to create, with a user namespace
	rootDirs int     // how many of pl.Dirs come from Policy.Writable (the first ones)
	// searchDirs is how many of pl.Dirs are searched for repositories:
	// all but the caches below Policy.CacheDir, which come last.
	searchDirs int
	// ownDirs are the caches below Policy.CacheDir made writable, by
	// ownCache.dir (real paths); nil without CacheDir.
	ownDirs map[string]string

	// Policy.Protected sorted out (addProtected): the paths protected,
	// those of them that exist (mounted read-only), the first missing
	// component of the others (reserved by Wrap), and what cannot be
	// protected, which is reported and does not fail Wrap.
	protected, protect, reserve, unprotected []string
}

// prepare works out what p means here. Its one side effect is making the
// directories of the caches below p.CacheDir. The TempDir Wrap may create
// is not in it yet.
func (p *Policy) prepare() (*prepared, error) {
	switch p.Mode {
	case Off, ReadOnly, WorkspaceWrite:
	default:
		return nil, fmt.Errorf("sandbox: unknown mode %d", int(p.Mode))
	}
	switch p.Network {
	case AllowNetwork, DenyNetwork:
	case ProxyNetwork:
		if _, err := p.proxyRules(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("sandbox: unknown network setting %d", int(p.Network))
	}
	pr := &prepared{applied: Applied{Mode: p.Mode, Network: p.Network}}
	if p.Mode != Off {
		if err := pr.prepareFS(p, kernelABI()); err != nil {
			return nil, err
		}
	}
	needMounts := len(pr.pl.ReadOnly) > 0 || pr.pl.ReadOnlyAll || len(pr.protected) > 0 || len(pr.pl.Hide) > 0
	var nsErr error
	if p.Network != AllowNetwork || needMounts {
		nsErr = namespaceProbe()
	}
	if p.Network != AllowNetwork {
		pr.prepareNet(p, nsErr)
	}
	if needMounts && nsErr != nil {
		pr.withoutMounts(p, nsErr)
	}
	if nsErr == nil && needMounts {
		pr.nsFlags |= unix.CLONE_NEWNS
		// Programs that run a shell on a pseudo-terminal (node-pty, script,
		// expect) need /dev/ptmx. A devpts instance of the command's own
		// holds only the terminals it opens: the user's are not there to
		// be written to.
		pr.pl.PrivatePTS = pr.pl.ReadOnlyAll && ptysAvailable()
	}
	pr.fillApplied()
	return pr, nil
}

// prepareFS works out the filesystem part of a confined mode: the
// writable paths, the read-only .git, the protected and hidden paths, and
// the Landlock ABI.
func (pr *prepared) prepareFS(p *Policy, abi int) error {
	if p.Mode == WorkspaceWrite {
		if len(p.Writable) == 0 {
			return errors.New("sandbox: workspace-write needs at least one Writable path (see DefaultWritable)")
		}
		var own []ownPath
		if p.CacheDir != "" {
			own = pr.makeOwnCaches(p)
		}
		if err := pr.addWritables(p, own); err != nil {
			return err
		}
		pr.applied.ownDirs = pr.ownDirs
		pr.applied.writableRoots = slices.Clone(pr.pl.Dirs[:pr.rootDirs])
		if !p.WritableGit {
			if err := pr.addGit(); err != nil {
				return err
			}
		}
		pr.addProtected(p)
	}
	for _, d := range nullDevices {
		if _, err := os.Stat(d); err == nil {
			if _, err := pr.pl.pin(d); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
		}
	}
	if err := pr.addHidden(p); err != nil {
		return err
	}
	switch {
	case abi == 0:
		pr.missing = append(pr.missing, fmt.Sprintf("Landlock is not available (kernel ABI 0): cannot enforce %s", p.Mode))
		if len(pr.pl.Hide) > 0 {
			// Landlock is what forbids a command to unmount them.
			pr.missing = append(pr.missing, "without Landlock, a command may unmount what hides the secrets")
		}
	case abi < minFSABI:
		pr.missing = append(pr.missing, fmt.Sprintf("Landlock ABI %d does not check truncate(2) (needs ABI %d): %s is incomplete", abi, minFSABI, p.Mode))
	}
	if abi > 0 {
		pr.pl.ABI, pr.pl.FS = abi, true
		pr.pl.Scoped = abi >= 6
		// Pathname unix sockets (ABI 9) stay usable unless the network
		// is denied: they reach the host's daemons, like the network.
		pr.pl.ResolveUnix = abi >= 9 && p.Network == AllowNetwork
		// Landlock does not check chmod, chown or utimes; a mount
		// namespace in which only the writable paths are writable turns
		// them into EROFS everywhere else.
		pr.pl.ReadOnlyAll = true
	}
	return nil
}

// prepareNet works out DenyNetwork and ProxyNetwork (a network namespace
// of its own, and for the latter the proxy), given whether namespaces can be had (nsErr).
func (pr *prepared) prepareNet(p *Policy, nsErr error) {
	if nsErr == nil {
		pr.pl.Loopback = true
		pr.nsFlags |= unix.CLONE_NEWNET
		pr.addProxy(p)
	} else {
		pr.missing = append(pr.missing, fmt.Sprintf("no network namespace (%v): cannot %s", nsErr, denyWhat(p.Network)))
		// A partial stand-in: classic TCP only.
		if abi := kernelABI(); abi >= 4 {
			pr.pl.ABI, pr.pl.TCPDeny = abi, true
		}
	}
	if err := seccompAvailable(); err == nil {
		pr.pl.NoUnix = true
	} else {
		pr.missing = append(pr.missing, fmt.Sprintf("no seccomp filter (%v): pathname unix sockets stay reachable", err))
	}
}

// fillApplied reports in pr.applied what the plan enforces.
func (pr *prepared) fillApplied() {
	a := &pr.applied
	a.LandlockABI = pr.pl.ABI
	if pr.pl.FS {
		a.Writable = append(append([]string(nil), pr.pl.Dirs...), pr.pl.Files...)
	}
	a.ReadOnly = pr.pl.ReadOnly
	a.Protected = pr.protected
	pr.pl.ReadOnly = append(append([]string(nil), pr.pl.ReadOnly...), pr.protect...)
	a.ReadOnlyElsewhere = pr.pl.ReadOnlyAll
	a.Scoped = pr.pl.Scoped
	a.NetNamespace = pr.pl.Loopback
	a.TCPRules = pr.pl.TCPDeny
	a.NoUnixSockets = pr.pl.NoUnix
	a.PrivatePTS = pr.pl.PrivatePTS
	a.Missing = append(append(pr.missing, pr.degraded...), pr.unprotected...)
}

// addGit marks the .git (a directory, or the file of a worktree or a
// submodule, with the directory its gitdir line names) of each writable
// directory and of the repositories nested in them (findGit) read-only.
// Landlock only adds rights, so a read-only hole in a writable tree needs
// a read-only bind mount instead; the helper makes it in a private mount
// namespace. Making all of .git read-only, not just hooks and config, also
// covers the other ways git can be pointed at code (commondir,
// modules/*/config, …) and keeps .git from being renamed away and
// replaced: a mount point cannot be.
func (pr *prepared) addGit() error {
	found, exhausted, err := findGit(pr.pl.Dirs[:pr.searchDirs], pr.rootDirs, rootSearchMax, gitSearchBudget)
	if err != nil {
		return err
	}
	pr.pl.ReadOnly = append(pr.pl.ReadOnly, found...)
	if exhausted {
		pr.applied.GitSearchCut = true
	}
	return nil
}

// unsupported joins what is missing into the error Wrap returns.
func unsupported(missing []string) error {
	return fmt.Errorf("%w: %s (set BestEffort to run with what the kernel offers)", ErrUnsupported, strings.Join(missing, "; "))
}

// Wrap rewrites cmd, which must not have been started, so that Start runs
// it under p: cmd.Path becomes the host binary (/proc/self/exe), which
// Init turns into the helper; cmd.Env gains TMPDIR and, for the helper
// only, the plan; cmd.SysProcAttr gains the namespaces. Everything else
// (Dir, Args, Stdin, process group, cgroup, Pdeathsig) is kept, and the
// command ends up with the pid Start reports.
//
// Wrap fails with ErrNoInit when the host's main does not call Init, and
// with ErrUnsupported naming what is missing when the kernel cannot
// enforce p (unless p.BestEffort). Mode Off with AllowNetwork leaves cmd
// untouched.
func (p *Policy) Wrap(cmd *exec.Cmd) (*Applied, error) {
	if p.Mode == Off && p.Network == AllowNetwork {
		return &Applied{Mode: Off, Network: AllowNetwork}, nil
	}
	if err := wrappable(cmd); err != nil {
		return nil, err
	}
	pr, err := p.prepare()
	if err != nil {
		return nil, err
	}
	if len(pr.missing) > 0 && !p.BestEffort {
		return nil, unsupported(pr.missing)
	}
	a := pr.applied
	pl := pr.pl
	pl.Path = cmd.Path

	env := withoutEnv(cmd.Environ(), planEnv)
	if p.Mode != Off {
		if env, err = p.withTempDir(&a, &pl, env); err != nil {
			return nil, err
		}
	}

	if pl.ABI == 0 && pr.nsFlags == 0 {
		// Best effort found nothing to enforce: no helper, no re-exec.
		cmd.Env = env
		return &a, nil
	}
	if len(pr.reserve) > 0 {
		var mounts, lost []string
		a.holds, mounts, lost = reserve(pr.reserve)
		pl.ReadOnly = append(pl.ReadOnly, mounts...)
		a.Missing = append(a.Missing, lost...)
	}
	if pl.ProxyPort != 0 {
		run, err := newProxyRun(p)
		if err != nil {
			a.Cleanup()
			return nil, err
		}
		pl.ProxyFD = 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, run.theirs)
		run.start()
		a.proxy = run
		env = proxyEnv(env, ProxyAddr, netproxy.Credentials{})
	}
	if pr.nsFlags != 0 {
		sp := cmd.SysProcAttr
		if sp == nil {
			sp = &syscall.SysProcAttr{}
			cmd.SysProcAttr = sp
		}
		pl.DropCaps = setUserNamespace(sp, pr.nsFlags)
	}
	js, err := json.Marshal(&pl)
	if err != nil {
		a.Cleanup()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd.Env = append(env, planEnv+"="+string(js))
	if len(cmd.Args) == 0 {
		cmd.Args = []string{cmd.Path}
	}
	cmd.Path = "/proc/self/exe"
	return &a, nil
}

// wrappable refuses a cmd that Wrap cannot take: one started already,
// without a path, or with user namespaces or credentials of its own; and
// any, when the host's main does not call Init.
func wrappable(cmd *exec.Cmd) error {
	switch sp := cmd.SysProcAttr; {
	case !initCalled.Load():
		return ErrNoInit
	case cmd.Process != nil:
		return errors.New("sandbox: Wrap called after Start")
	case cmd.Path == "":
		return errors.New("sandbox: cmd.Path is empty")
	case sp != nil && (sp.Cloneflags&unix.CLONE_NEWUSER != 0 || len(sp.UidMappings) > 0 || sp.Credential != nil):
		return errors.New("sandbox: cmd already sets user namespaces or credentials; the sandbox needs them")
	}
	return nil
}

// withTempDir gives the command its TMPDIR (p.TempDir, else a fresh one
// that a.Cleanup removes), writable under pl, and points env at it and at
// the policy's own caches.
func (p *Policy) withTempDir(a *Applied, pl *plan, env []string) ([]string, error) {
	tmp := p.TempDir
	if tmp == "" {
		var err error
		if tmp, err = owner.TempDir("sandbox"); err != nil {
			return nil, fmt.Errorf("sandbox: creating TMPDIR: %w", err)
		}
		a.ownTemp = true
	} else if !filepath.IsAbs(tmp) {
		return nil, fmt.Errorf("sandbox: TempDir %q is not absolute", tmp)
	}
	real, err := ResolvePath(tmp)
	if err == nil && pl.FS {
		_, err = pl.pin(real)
	}
	if err != nil {
		a.Cleanup()
		return nil, fmt.Errorf("sandbox: TempDir: %w", err)
	}
	a.TempDir = tmp
	if pl.FS {
		a.Writable = append(a.Writable, real)
	}
	env = append(withoutEnv(env, "TMPDIR"), "TMPDIR="+tmp)
	if a.ownDirs != nil {
		env = cacheEnv(env, a.ownDirs, tmp, a.writableRoots)
	}
	return env, nil
}

// setUserNamespace asks for the namespaces in flags inside a new user
// namespace, and reports whether the helper must drop the capabilities
// it was given. The user namespace is there even for root: it keeps a
// root command from joining the host's namespaces again with setns(2),
// which needs CAP_SYS_ADMIN over the host's user namespace.
func setUserNamespace(sp *syscall.SysProcAttr, flags uintptr) (dropCaps bool) {
	sp.Cloneflags |= unix.CLONE_NEWUSER | flags
	uids, gids := idMaps()
	sp.UidMappings, sp.GidMappings = uids, gids
	if os.Geteuid() == 0 {
		return false
	}
	// Mapped to themselves, ordinary users keep no capabilities across
	// exec; the helper needs these two, as ambient ones, to mount and to
	// bring up the loopback, and clears them before exec'ing the command.
	sp.GidMappingsEnableSetgroups = false
	sp.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	return true
}

var (
	idMapOnce  sync.Once
	uidMap     []syscall.SysProcIDMap
	gidMap     []syscall.SysProcIDMap
	probeOnce  sync.Once
	probeError error
)

// idMaps maps the ids the host has to themselves: all of them for root
// (read from its own maps, which are partial inside a container), the
// caller's own uid and gid otherwise.
func idMaps() (uids, gids []syscall.SysProcIDMap) {
	idMapOnce.Do(func() {
		if os.Geteuid() == 0 {
			uidMap = readIDMap("/proc/self/uid_map")
			gidMap = readIDMap("/proc/self/gid_map")
		}
		if len(uidMap) == 0 || len(gidMap) == 0 {
			uidMap = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			gidMap = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		}
	})
	return uidMap, gidMap
}

func readIDMap(name string) []syscall.SysProcIDMap {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	var out []syscall.SysProcIDMap
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		size, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || inside > uint64(maxInt) {
			continue
		}
		// A range reaching beyond int (32-bit platforms) maps what fits.
		size = min(size, uint64(maxInt)-inside)
		out = append(out, syscall.SysProcIDMap{ContainerID: int(inside), HostID: int(inside), Size: int(size)})
	}
	return out
}

const maxInt = int(^uint(0) >> 1)

// namespaceProbe is probeNamespaces; tests replace it to simulate a
// machine without user namespaces.
var namespaceProbe = probeNamespaces

// probeNamespaces checks once, by starting the helper in probe mode,
// that a user namespace with a network and a mount namespace can be had
// and set up. Unprivileged user namespaces are often disabled (sysctl,
// AppArmor), and only trying tells.
func probeNamespaces() error {
	if !initCalled.Load() {
		// Without Init, /proc/self/exe would run the host program itself.
		return ErrNoInit
	}
	probeOnce.Do(func() {
		c := exec.Command("/proc/self/exe")
		c.Args = []string{"acpterm-sandbox-probe"}
		js, _ := json.Marshal(&plan{Probe: true, Loopback: true})
		c.Env = helperEnv(js)
		c.SysProcAttr = &syscall.SysProcAttr{}
		setUserNamespace(c.SysProcAttr, unix.CLONE_NEWNET|unix.CLONE_NEWNS)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				err = errors.New(strings.TrimPrefix(msg, "sandbox: "))
			}
			probeError = err
		}
	})
	return probeError
}
