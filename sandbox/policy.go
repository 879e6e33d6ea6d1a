package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// Mode says where a sandboxed command may write.
type Mode int

const (
	// Off runs the command with the user's rights: no filesystem
	// confinement (the Network setting still applies).
	Off Mode = iota
	// ReadOnly lets the command read anywhere and write only in its
	// private temporary directory and to /dev/null, /dev/zero and
	// /dev/full.
	ReadOnly
	// WorkspaceWrite is ReadOnly plus the paths in Policy.Writable
	// (typically DefaultWritable(roots...)); the .git of each writable
	// directory stays read-only unless Policy.WritableGit is set.
	WorkspaceWrite
)

func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case ReadOnly:
		return "read-only"
	case WorkspaceWrite:
		return "workspace-write"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Network says whether a sandboxed command may use the network.
type Network int

const (
	// AllowNetwork leaves the network as the host has it.
	AllowNetwork Network = iota
	// DenyNetwork runs the command in a network namespace of its own whose
	// only interface is a loopback: it can talk to itself on 127.0.0.1 but
	// reaches nothing outside, not even the host's loopback services.
	DenyNetwork
	// ProxyNetwork is DenyNetwork with one way out: a proxy that acpterm
	// runs outside the namespace, listening on the command's loopback at
	// ProxyAddr, which connects only to the hosts in Policy.AllowHosts
	// (see "Network by hostname" in the package doc).
	ProxyNetwork
)

func (n Network) String() string {
	switch n {
	case AllowNetwork:
		return "allow"
	case DenyNetwork:
		return "deny"
	case ProxyNetwork:
		return "proxy"
	}
	return fmt.Sprintf("Network(%d)", int(n))
}

// Policy is what a sandboxed command may do. The zero value enforces
// nothing. A Policy is not modified by Wrap and may be shared.
type Policy struct {
	Mode    Mode
	Network Network

	// AllowHosts are the host patterns a ProxyNetwork command may reach
	// (netproxy.ParseRules: "api.example.com", "*.example.com:443",
	// "127.0.0.1:8080", a loopback address needing its port, which is
	// forwarded); other network settings ignore it. Empty: the proxy
	// refuses everything.
	AllowHosts []string
	// Proxy holds the hooks and limits of the proxy ProxyNetwork runs
	// (OnDeny for reports of what was refused; Resolve and Dial for
	// tests); nil means the defaults.
	Proxy *netproxy.Options
	// ProxyClient names, in the questions of Proxy.Ask, the command Wrap
	// starts with a proxy of its own (a Spawner's commands share one, and
	// are named by Cmd.ProxyClient). Set it per command, on a copy.
	ProxyClient string

	// Writable lists the files and directories (with everything below
	// them) that a WorkspaceWrite command may change; other modes ignore
	// it. Each must exist. Symlinks on a path's way are followed only
	// where no sandbox could have made them (see ResolvePath): a path
	// reached through one in the home directory, the temporary directory
	// or another writable path fails Wrap with a *LinkError naming it.
	// The repositories below these paths are all found (and their .git
	// kept read-only, see WritableGit), however many directories that
	// takes to read.
	Writable []string

	// Caches lists paths that a WorkspaceWrite command may change as it
	// may Writable's, on top of them, when it is safe: one that does not
	// exist is skipped, and one reached through a symlink that a sandbox
	// could have made is left out and named in Applied.LeftOut rather
	// than failing Wrap. The search for repositories in them has a budget
	// (Applied.GitSearchCut). DefaultCaches gives the usual list.
	//
	// A cache listed here is one the user's own builds, run later and
	// unconfined, trust: a command can poison it (a doctored Go build
	// cache entry or module source, an npm tarball, a pip wheel, a crate's
	// source) and the user's next `go build` or `npm install` runs what it
	// put there. CacheDir gives commands caches of their own instead;
	// list a user's cache here only knowingly.
	Caches []string

	// CacheDir, when set, gives WorkspaceWrite commands caches of their
	// own below it, which only sandboxed commands use, so that the user's
	// caches can stay read-only to them. Wrap and the Spawner make these
	// directories (mode 0700, as real directories: no symlink is
	// followed where a sandbox could have made one), make them writable
	// as they do Caches (checked at each Wrap and NewSpawner; one reached
	// through such a symlink, a link planted in place of CacheDir/go-build
	// say, is left out and named in Applied.LeftOut), and set in the
	// command's environment, over what it had:
	//
	//	GOCACHE=CacheDir/go-build       Go's build cache
	//	GOMODCACHE=CacheDir/go-mod      Go's module cache
	//	npm_config_cache=CacheDir/npm   npm's cache
	//	PIP_CACHE_DIR=CacheDir/pip      pip's cache
	//	CARGO_HOME=CacheDir/cargo       cargo's registry and git checkouts
	//	UV_CACHE_DIR=CacheDir/uv        uv's cache (and UV_LINK_MODE=copy)
	//	XDG_CACHE_HOME=CacheDir/xdg     everything else that follows XDG
	//	GOPROXY=file://USERMODCACHE/cache/download,USERPROXY
	//
	// For a cache left out, the variable names a directory in the
	// command's TMPDIR instead: a cold cache, never the user's. A
	// variable whose user's cache (where the command's environment, or
	// the tool's default, puts it) lies in a Writable path names that
	// cache instead: the user made it writable knowingly, or the
	// workspace holds it.
	//
	// GOPROXY lets a confined Go build start from the modules the user
	// has downloaded, without the network: the download directory of the
	// user's module cache (GOMODCACHE, else GOPATH's first entry's
	// pkg/mod, else ~/go/pkg/mod, as the command's environment and Go's
	// environment file say) comes first, as a file:// proxy, then the
	// user's GOPROXY (the environment's, else the one in Go's environment
	// file, GOENV or ~/.config/go/env, else https://proxy.golang.org,direct).
	// GOPROXY=off stays off. go checks what a file:// proxy serves
	// against go.sum and the checksum database as it does any proxy's, so
	// the user's cache is read, never trusted. Queries for the latest
	// version (go get -u, @latest) see the versions in the user's cache
	// first; GONOPROXY and GOPRIVATE modules still need the network.
	//
	// CARGO_HOME moves cargo's home: ~/.cargo/config.toml and
	// ~/.cargo/credentials.toml are then not read as CARGO_HOME's, though
	// cargo still reads the .cargo/config.toml of every directory above
	// the one it runs in, which includes ~/.cargo/config.toml for a
	// workspace in the home directory.
	//
	// The own caches are shared by every sandboxed command that uses the
	// same CacheDir, whatever its workspace: a command can poison what
	// another workspace's sandboxed build takes from them. Give commands
	// that must not affect each other different CacheDirs.
	// DefaultCacheDir gives the usual one. Other modes ignore CacheDir.
	CacheDir string

	// WritableGit leaves the .git of each writable directory writable. By
	// default it is mounted read-only for the command, because hooks and
	// config written there would run later, outside the sandbox, the next
	// time the user runs git. The price: a sandboxed `git commit` fails.
	WritableGit bool

	// Protected lists files and directories in the writable paths that a
	// WorkspaceWrite command may neither change nor create, because
	// programs run what they hold later, with the user's rights: an
	// editor's tasks, an agent's hooks and MCP servers, a shell's rc file.
	// DefaultProtected gives a workspace's; an agent's own settings, hooks
	// and extensions in its state directory belong here too. One that
	// exists is mounted read-only, as .git is. One that does not is
	// reserved: Wrap makes an empty directory at the first missing
	// component of its path and mounts it read-only, and Applied.Cleanup
	// (Spawner.Close) removes it; see "Protected files" in the package doc.
	// Entries named .git follow WritableGit, the others WritableConfig.
	// What cannot be protected (a symlink at a protected name, a directory
	// that cannot be made, no mount namespace) is named in
	// Applied.Missing and does not fail Wrap.
	Protected []string

	// WritableConfig leaves the entries of Protected not named .git
	// writable, for agents that are to change their own configuration.
	WritableConfig bool

	// Hidden lists files and directories that a confined command (any
	// mode but Off) may not read, because they hold the user's
	// credentials: DefaultSecrets gives the usual list. Each is covered
	// in the command's mount namespace, a directory by an empty read-only
	// tmpfs (everything below it is gone: reads fail with ENOENT), a file
	// by a socket node, which open(2) refuses with ENXIO whoever asks
	// (root too), and a connect(2) with ECONNREFUSED. A path that does
	// not exist is skipped; one reached through symlinks is hidden at its
	// real path. Without a mount namespace Landlock hides it instead
	// (names visible, content not: see the package doc), and
	// Applied.HiddenByLandlock says so. One that exists and cannot be
	// hidden (a failed mount; without a mount namespace, a unix socket)
	// fails Wrap unless BestEffort. The writable paths are shown through a hidden
	// directory they lie in; a hidden path that is a writable path, or lies
	// above one, is not hidden. Applied.Hidden names what was.
	Hidden []string

	// Readable lists paths that stay readable although Hidden covers
	// them: an entry of Hidden or Redacted at or below one is dropped, and
	// one that lies in a hidden directory is shown through it (its own
	// mount, as the host has it). ~/.ssh/known_hosts, say, in a hidden
	// ~/.ssh.
	Readable []string

	// Redacted lists files in .npmrc form that a confined command sees
	// without the lines that set a credential (RedactNpmrc): a copy made
	// when Wrap (or NewSpawner) runs is mounted read-only over each. One
	// larger than 64 KiB, or any without a mount namespace, is hidden
	// whole.
	Redacted []string

	// TempDir is the command's private temporary directory, writable in
	// every mode but Off and exported as TMPDIR. Empty: Wrap creates one,
	// and Applied.Cleanup removes it.
	TempDir string

	// BestEffort applies what the kernel offers and reports the rest in
	// Applied.Missing, instead of failing Wrap.
	BestEffort bool

	// WithoutMountNamespace runs without what only a mount namespace
	// gives (the read-only .git directories and the read-only rest of the
	// file system) when none can be had, as where unprivileged user
	// namespaces are disabled (stock Ubuntu 24.04 and later), and names
	// what is lost in Applied.Missing, instead of failing Wrap. Landlock
	// still confines writes. Everything else still fails without
	// BestEffort.
	WithoutMountNamespace bool
}

// Applied is what Wrap arranged for a command.
type Applied struct {
	Mode    Mode
	Network Network

	// LandlockABI is the Landlock ABI version the rules are written for;
	// 0 when Landlock is not used.
	LandlockABI int
	// Writable is what the command may write: resolved paths, its
	// TempDir and the null devices. Empty when writes are not confined.
	Writable []string
	// ReadOnly lists the paths under Writable that are mounted read-only
	// (the .git of writable directories, and the directories their gitdir
	// lines name).
	ReadOnly []string
	// Protected lists the paths of Policy.Protected that the command may
	// neither change nor create: those that exist are mounted read-only,
	// the others reserved.
	Protected []string
	// ReadOnlyElsewhere: everything outside Writable is mounted read-only
	// in the command's mount namespace, so that changes Landlock does not
	// check (chmod, chown, utimes, extended attributes) fail there with
	// EROFS.
	ReadOnlyElsewhere bool
	// PrivatePTS: the command has a devpts instance of its own at
	// /dev/pts, and may open pseudo-terminals through /dev/ptmx; the
	// user's terminals are not in it. Without a mount namespace there is
	// none, and opening a pseudo-terminal fails.
	PrivatePTS bool
	// GitSearchCut: the search for repositories in Policy.Caches
	// stopped at its budget of directories, so a repository further on
	// is writable. (In Policy.Writable the search is not cut.)
	GitSearchCut bool
	// Hidden lists the real paths of Policy.Hidden hidden from the
	// command, and Shown those shown through them (Policy.Readable and
	// the writable paths below a hidden directory).
	Hidden, Shown []string
	// HiddenByLandlock: without a mount namespace, Landlock hides the
	// Hidden paths instead: their names can be listed, their content
	// cannot be read, and a directory on the way to one reads only
	// what was in it at the start.
	HiddenByLandlock bool
	// Redacted lists the real paths of Policy.Redacted the command sees
	// without their credential lines.
	Redacted []string
	// LeftOut names the paths of Policy.Caches, and of the caches below
	// Policy.CacheDir, that were not made writable, and why: each is
	// reached through a symlink that a sandboxed command could have made
	// (or, below CacheDir, could not be made).
	LeftOut []string
	// TempDir is the command's private TMPDIR ("" in mode Off).
	TempDir string
	// Scoped: the command cannot signal processes outside its sandbox nor
	// connect to their abstract unix sockets (Landlock ABI 6).
	Scoped bool
	// NetNamespace: the command has a private network namespace with only
	// a loopback interface.
	NetNamespace bool
	// ProxyAddr is where a ProxyNetwork command finds its proxy, on its
	// own loopback ("" when it has none), and AllowHosts what the proxy
	// lets it reach.
	ProxyAddr  string
	AllowHosts []string
	// TCPRules: Landlock forbids TCP connect and bind, a partial stand-in
	// for the namespace (Multipath TCP and UDP are not covered).
	TCPRules bool
	// NoUnixSockets: a seccomp filter lets socket(2) make only AF_INET,
	// AF_INET6 and AF_NETLINK sockets and socketpair(2) only AF_UNIX
	// stream and seqpacket pairs, and refuses io_uring, so the command
	// cannot reach the host's pathname unix sockets, nor sockets of
	// families no network namespace holds (DenyNetwork only).
	NoUnixSockets bool
	// Missing names what the policy asks for and the kernel could not
	// give; only ever non-empty with BestEffort, or with
	// WithoutMountNamespace for what needs a mount namespace.
	Missing []string
	// Shared: the command was started by a Spawner and shares its Landlock
	// domain, namespaces and temporary root with the spawner's other
	// commands (see Policy.NewSpawner).
	Shared bool

	ownTemp bool         // Wrap created TempDir
	holds   *reservation // the placeholders Wrap made or shares
	proxy   *proxyRun    // the proxy Wrap started; nil when not Wrap's
	// ownDirs are the writable caches below Policy.CacheDir, by
	// ownCache.dir; nil when the policy has no CacheDir. cacheEnv points
	// the command at them.
	ownDirs map[string]string
	// writableRoots are the directories of Policy.Writable (real): a
	// user's cache in one of them keeps its variable (cacheEnv).
	writableRoots []string
}

// Confined reports whether the command's writes are confined.
func (a *Applied) Confined() bool { return a.LandlockABI > 0 }

// Cleanup removes the temporary directory Wrap created, with whatever the
// command left in it; call it once the command has exited. It does nothing
// for a TempDir the caller supplied.
//
// It also removes the placeholders Wrap made for protected paths that do
// not exist (see Policy.Protected), unless another sandbox still uses
// them: call it only once the command and its descendants are gone, since
// a placeholder removed while they run no longer protects its name.
func (a *Applied) Cleanup() error {
	if a == nil {
		return nil
	}
	a.holds.release()
	a.holds = nil
	a.proxy.stop()
	a.proxy = nil
	if !a.ownTemp || a.TempDir == "" {
		return nil
	}
	a.ownTemp = false
	return os.RemoveAll(a.TempDir)
}

// String is a one-line summary, for logs.
func (a *Applied) String() string {
	var parts []string
	parts = append(parts, "mode "+a.Mode.String())
	if a.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock abi %d", a.LandlockABI))
		parts = append(parts, fmt.Sprintf("writable %d paths", len(a.Writable)))
	}
	if len(a.ReadOnly) > 0 {
		parts = append(parts, fmt.Sprintf("read-only .git %d", len(a.ReadOnly)))
	}
	if len(a.Protected) > 0 {
		parts = append(parts, fmt.Sprintf("protected %d", len(a.Protected)))
	}
	if len(a.Hidden)+len(a.Redacted) > 0 {
		parts = append(parts, fmt.Sprintf("hidden %d, redacted %d", len(a.Hidden), len(a.Redacted)))
		if a.HiddenByLandlock {
			parts = append(parts, "hidden by landlock (names visible, content not)")
		}
	}
	if a.GitSearchCut {
		parts = append(parts, "search for .git in the caches cut short")
	}
	if len(a.LeftOut) > 0 {
		parts = append(parts, "left out: "+strings.Join(a.LeftOut, "; "))
	}
	if a.ReadOnlyElsewhere {
		parts = append(parts, "read-only elsewhere")
	}
	if a.Scoped {
		parts = append(parts, "scoped ipc")
	}
	switch {
	case a.ProxyAddr != "":
		parts = append(parts, proxySummary(a))
	case a.NetNamespace && a.NoUnixSockets:
		parts = append(parts, "network denied (namespace, no unix sockets)")
	case a.NetNamespace:
		parts = append(parts, "network denied (namespace)")
	case a.TCPRules:
		parts = append(parts, "network tcp denied (landlock)")
	default:
		parts = append(parts, "network allowed")
	}
	if a.Shared {
		parts = append(parts, "shared helper")
	}
	if len(a.Missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(a.Missing, "; "))
	}
	return strings.Join(parts, ", ")
}

// ErrNoInit is returned by Wrap when the host program has not called Init:
// the command would otherwise run unconfined.
var ErrNoInit = errors.New("sandbox: the host program must call sandbox.Init() first in main")

// ErrUnsupported is wrapped by the errors of Wrap when this system cannot
// enforce the policy; the message names what is missing.
var ErrUnsupported = errors.New("sandbox: not supported")

// Exit statuses of a command whose sandbox helper failed, following the
// convention of env(1) and timeout(1). The helper writes a one-line
// "sandbox: …" message to the command's stderr first.
const (
	ExitSetupFailed = 125 // the sandbox could not be set up; nothing ran
	ExitCannotExec  = 126 // the command exists but could not be executed
	ExitNotFound    = 127 // the command does not exist
)

// minFSABI is the first Landlock ABI that confines every kind of write:
// before ABI 3, truncate(2) is not checked.
const minFSABI = 3

// initCalled is set by Init; Wrap refuses to work without it.
var initCalled atomic.Bool
