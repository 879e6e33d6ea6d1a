// Package sandbox confines the commands an untrusted agent asks a host to
// run: where they may write, whether they may use the network. The kernel
// enforces it, and nothing the command does afterwards (new sessions,
// double forks, nested namespaces, a second ruleset) lifts it.
//
// # Use
//
// The host program's main must call Init first, because the restrictions
// are applied by the host binary itself, re-executed as a helper between
// fork and the command's exec (Go cannot run code in that window). Wrap
// refuses with ErrNoInit when Init is not wired, rather than run the
// command unconfined.
//
//	func main() {
//		sandbox.Init() // first: in a helper it never returns
//		…
//	}
//
//	cmd := exec.Command("go", "test", "./...")
//	cmd.Dir = root
//	p := &sandbox.Policy{
//		Mode:     sandbox.WorkspaceWrite,
//		Network:  sandbox.DenyNetwork,
//		Writable: []string{root},
//		CacheDir: sandbox.DefaultCacheDir(), // GOCACHE, npm's cache… of their own
//	}
//	applied, err := p.Wrap(cmd) // just before Start
//	if err != nil {
//		return err // ErrNoInit, or ErrUnsupported naming what is missing
//	}
//	defer applied.Cleanup() // the private TMPDIR Wrap made
//	err = cmd.Run()
//
// Wrap keeps cmd's Dir, Args, stdio, SysProcAttr (process group, cgroup,
// Pdeathsig) and pid: the helper execs the command in place.
//
// # Many commands: a Spawner
//
// Wrap starts the host binary once per command (a Go runtime, about 10 ms
// here). Policy.NewSpawner starts the helper once, confined once, and
// starts each command from it with a fork and exec (about 1.5 ms more than
// an unconfined start). The commands of one Spawner share its Landlock
// domain, namespaces and temporary root (each still gets its own TMPDIR),
// so give each session its own; the terminal package does.
//
//	s, err := p.NewSpawner()
//	…
//	defer s.Close()
//	c, err := s.Start(&sandbox.Cmd{Path: "/usr/bin/go", Args: []string{"go", "test", "./..."}, Dir: root,
//		Env: os.Environ(), Stdout: w, Stderr: w, Setpgid: true, Pdeathsig: syscall.SIGKILL})
//	…
//	st, err := c.Wait()
//	c.Release()
//
// A command can run on a pseudo-terminal of the helper's own devpts
// (Applied.PrivatePTS): Spawner.OpenPTY opens one, the host keeps the
// master, and the command gets the terminal end as Stdin, Stdout and
// Stderr with Cmd.Setsid and Cmd.Setctty. It finds its terminal by name
// there (/dev/pts/0), and may open /dev/tty: the helper runs in a session
// of its own without a controlling terminal, so /dev/tty is a command's
// own pty or nothing (ENXIO), never the user's terminal.
//
// # What is enforced (Linux)
//
// Filesystem (Landlock, ABI 3 or later for every kind of write): the
// command reads and executes anywhere and writes only to its private
// TempDir (exported as TMPDIR), /dev/null, /dev/zero and /dev/full, plus in
// WorkspaceWrite the Policy.Writable paths and the caches of their own
// below Policy.CacheDir. /dev/tty is not writable (the user's terminal),
// except for the commands of a Spawner with a devpts of its own, whose
// /dev/tty is their own pty or none. Renames and links out of the writable paths are
// writes outside them and fail. Landlock ABI 6 also keeps the command from
// signalling processes outside its sandbox or connecting to their abstract
// unix sockets.
//
// Everything else read-only: in every confined mode the command runs in a
// private mount namespace where all mounts but the writable paths are
// read-only, so that what Landlock does not check (chmod, chown, utimes,
// extended attributes) fails outside them with EROFS. A write outside is
// then refused with EROFS rather than Landlock's EACCES; both hold.
//
// .git: in WorkspaceWrite the .git of each writable directory, and of the
// repositories nested in them (see gitSearchDepth), is mounted read-only
// too, with the directory a .git file's gitdir line names (hooks and
// config written there would run outside the sandbox the next time the
// user runs git; Landlock cannot carve a read-only hole in a writable
// tree). Policy.WritableGit turns this off, for agents that commit.
//
// # Protected files
//
// Policy.Protected names files that programs run things from later,
// outside any sandbox (DefaultProtected: a workspace's .vscode, .claude,
// .mcp.json, dotfiles; an agent's profile adds its own settings, hooks and
// extensions). Those that exist are mounted read-only, as .git is. A bind
// mount needs something to cover, so for one that does not exist Wrap
// makes an empty directory at the first missing component of its path, or
// a file when that is a name programs open as a file (.mcp.json and
// opencode.json hold "{}", an empty JSON object; the dotfiles nothing),
// marked with the sticky bit (set by the mkdir or open that makes it, so
// that no other sandbox sees it unmarked), mounts it read-only, and
// Applied.Cleanup or
// Spawner.Close removes it: the name cannot be created, and nothing is
// left once the sandbox is done.
// Each sandbox that uses a placeholder holds a shared flock(2) on it, and
// only the last one removes it (an rmdir on the host would detach the
// mounts over it in the other sandboxes). After a kill -9 the placeholder
// stays, empty, until the next sandbox that protects the same path takes
// it over and removes it when done. An empty directory or file is what the
// placeholder looks like to everyone meanwhile, the user's unconfined
// programs too: git ignores an empty directory, and a program reads an
// empty file or object as no settings (a directory where it opens a file
// would give it EISDIR, on which opencode 1.18 does not start; an empty
// .mcp.json, qwen warns it cannot parse). Sandboxes of one
// process share the placeholders one of them holds without touching the
// file system; making them costs a start about 1.5 ms, and removing them
// at its end about as much (a directory made, and removed after an RCU
// grace period, per name; BenchmarkStart's wrap-ms and cleanup-ms). A <root>/.git that
// does not exist is reserved the same way, so that a command cannot make
// the workspace a repository of its own (git init, then core.fsmonitor
// runs at the user's next git status there).
//
// # Secrets out of reach
//
// Policy.Hidden names what a confined command may not read at all
// (DefaultSecrets: ~/.ssh, the clouds' and container registries'
// credentials, ~/.netrc, ~/.git-credentials, ~/.gnupg, password stores,
// browser profiles, the agents' own logins), Policy.Readable what stays
// readable within it (~/.ssh/known_hosts, config and *.pub, so that ssh
// and git work through an agent socket), Policy.Redacted the files in
// .npmrc form seen without their token lines (RedactNpmrc). In the
// command's mount namespace the helper covers each hidden directory with
// an empty read-only tmpfs (reads below it fail with ENOENT) and each
// hidden file with a socket node (open fails with ENXIO, for root too;
// a hidden unix socket refuses connections), and puts a redacted copy,
// read-only, over each Redacted file. All of them come from one small
// tmpfs the helper fills, detached, before it is mounted anywhere. A
// path reached through symlinks is hidden at its real path; one that does
// not exist is skipped.
//
// What a command can try against them fails: Landlock forbids every
// mount, unmount and move to a process it restricts (in a new user and
// mount namespace too), a root command has lost CAP_SYS_ADMIN, a mount
// point cannot be renamed or removed, a hard link needs the file, and
// Landlock's ptrace rule keeps /proc/PID/root of the host's processes out
// of reach. A hidden path that exists and cannot be hidden (a mount that
// fails; without a mount namespace, a unix socket) fails Wrap, or the
// helper, naming it, unless BestEffort. Mode Off hides nothing.
//
// Without a mount namespace (no unprivileged user namespaces, as on stock
// Ubuntu 24.04, with WithoutMountNamespace) Landlock hides them instead,
// and Applied.HiddenByLandlock says so. Reading files is a handled right,
// so what no rule grants is unreadable: instead of one read rule on "/",
// the helper grants read and execute on every entry of every directory on
// the way to a hidden path, except the entry leading on to it, picked by
// device and inode, not name; READ_DIR on "/"; and read on the Readable
// paths within a hidden directory. Names stay visible (ls ~/.ssh lists
// them), content does not (cat fails with EACCES). A writable directory
// on the way (a workspace that is the home directory) loses its read
// rights, which its entries get instead; writes, removals and renames in
// it, and in the hidden paths below it, stay as they were. Rules stay
// with inodes: a hidden directory renamed keeps none, a hard link or
// rename that would put a hidden file where it can be read fails (EXDEV,
// Landlock's refer check), and a symlink leads to the file's real place.
// A file created in a directory on the way after the start cannot be read
// there. Redacted files are hidden whole (reported in Applied.Missing),
// and a hidden unix socket cannot be hidden (Landlock does not check
// connect(2) before ABI 9) unless DenyNetwork's seccomp filter forbids
// such sockets.
//
//	p := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{root}}
//	home, _ := os.UserHomeDir()
//	sandbox.DefaultSecrets(home).Apply(p)
//	p.Readable = append(p.Readable, filepath.Join(home, ".aws")) // this one is needed
//
// Applied.Hidden, Shown and Redacted say what was done; nothing at the
// syscall level tells a read that failed on a hidden path from any other
// ENOENT.
//
// Network: DenyNetwork gives the command a network namespace of its own
// with only a loopback interface, and a seccomp filter that lets sockets
// through as an allow-list: socket(2) of AF_INET, AF_INET6 and AF_NETLINK
// only, socketpair(2) of AF_UNIX streams and sequenced packets only, no
// io_uring. Pathname unix sockets belong to no network namespace, and
// through them (connect, or sendto from a datagram pair, which the kernel
// also makes of a SOCK_RAW one) the command would reach the host's
// daemons (a container engine, an X server, an SSH agent, the journal);
// families such as AF_VSOCK are not namespaced at all. Pipes between the
// command's own processes still work; a unix socket server of its own
// does not. Landlock's TCP rules are used only as a partial fallback with
// BestEffort when no namespace can be had: they miss Multipath TCP (Go's
// default for listeners since 1.24) and UDP.
//
// # Network by hostname
//
// ProxyNetwork is DenyNetwork (the namespace with only a loopback, the
// same seccomp filter) with one way out: a proxy (package netproxy) that
// the host runs outside the namespace and that connects only to the
// hosts Policy.AllowHosts lists ("api.example.com", "*.example.com",
// with an optional port, or address literals), resolving names itself.
// The helper, once in the namespace, opens the proxy's listening socket
// on the command's loopback at ProxyAddr and passes it to the host over
// a socketpair of its own (SCM_RIGHTS) before anything of the command's
// runs; no host socket file is involved, and the command holds no
// descriptor of the listener and cannot bind its address. The commands
// get HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (socks5h), their lowercase
// forms, NO_PROXY, npm's and git's proxy settings and NODE_USE_ENV_PROXY
// (see proxyEnv); a program that ignores them reaches nothing, and no
// name resolves inside. Refusals are an HTTP 403 or SOCKS reply 0x02 for
// the command and a netproxy.Denial for Policy.Proxy.OnDeny. A loopback
// address on the list (with its port: 127.0.0.1:8080) is the host's,
// forwarded to the same address in the namespace by a listener the
// helper opens and hands out with the proxy's; NO_PROXY covers the
// loopback, whose other ports stay the command's own. With Wrap
// the proxy lives until Applied.Cleanup, with a Spawner until Close; a
// Spawner's commands share one proxy.
//
// With Policy.Proxy.Ask (a netproxy.Asker) a host not on the list is
// asked about rather than refused, naming the command: a Spawner gives
// each command credentials of its own in its proxy URLs, labelled
// Cmd.ProxyClient and ended at Release; a command wrapped alone has its
// proxy to itself, named Policy.ProxyClient. The commands of one
// Spawner run as the same user: one that reads another's environment
// can connect under its name, not under a name no command has.
//
// Without user namespaces (disabled by sysctl or AppArmor, as on stock
// Ubuntu 24.04 and later) there is no mount or network namespace:
// Policy.WithoutMountNamespace then runs on Landlock alone, without the
// read-only .git and the read-only rest, and Applied.Missing says so;
// DenyNetwork cannot be had at all without BestEffort.
//
// Namespaces are always created inside a new user namespace, even for
// root, so that a root command cannot setns(2) back into the host's. The
// ids map to themselves (all of root's, or the caller's own).
//
// # Other systems
//
// On macOS and Windows only Mode Off with AllowNetwork works; anything
// else is an ErrUnsupported error from Wrap. The plan: Seatbelt profiles
// through sandbox-exec on macOS; an AppContainer with a Job object on
// Windows.
//
// # Known gaps
//
//   - Reads are confined only where Policy.Hidden says: a secret kept
//     anywhere else (a project's .env, a key in the workspace, a token
//     in an environment variable the caller passes) is readable. A
//     hidden path reachable through another mount of the same file
//     system (a bind mount of the home elsewhere) is readable there, and
//     so is a block device a root command may open.
//   - /tmp and /dev/shm are not writable (TMPDIR is the private way);
//     programs that hard-code them, or POSIX semaphores, fail.
//   - The user's caches (Go's build and module caches, npm's, pip's,
//     cargo's, ~/.cache) feed builds that run later with the user's
//     rights; with Policy.CacheDir commands get caches of their own
//     instead, which only sandboxed commands use, and the user's stay
//     read-only to them. That leaves:
//   - The own caches are shared by every command of the same CacheDir,
//     whatever its workspace: a hostile command can poison what another
//     workspace's sandboxed build takes from them (a doctored Go build
//     cache entry ends up in the binary built there, which the user may
//     then run). Give commands that must not affect each other different
//     CacheDirs. Their .git directories are not searched for (nobody runs
//     git there unconfined).
//   - Tools whose cache is not named by one of CacheDir's variables write
//     where they always do, which is read-only to the command unless it is
//     a Writable path: pnpm's store, yarn 2's global cache, Gradle's and
//     Maven's caches (~/.gradle, ~/.m2) fail or fall back.
//   - The caches in Policy.Caches (DefaultCaches), and a cache given as a
//     Writable path, can be poisoned for later, unsandboxed builds. What
//     they cannot do is widen a later sandbox: a writable path reached
//     through a symlink in the home directory, the temporary directory or
//     another writable path is refused (ResolvePath), and the helper opens
//     each writable path without following links and checks it is the one
//     Wrap saw.
//   - A terminal device the user owns can be read by path (/dev/pts/N).
//   - A command cannot run a sandbox of its own inside this one: it cannot
//     write /proc/self/uid_map.
//   - A .git created by the command (git init, git clone) while it runs
//     is writable: the search for repositories happens when the policy is
//     applied, and a repository deeper than gitSearchDepth, or in
//     Policy.Caches past the search's budget (Applied.GitSearchCut), is not
//     found. In Policy.Writable the search has no budget that a command
//     could exhaust (past a million directories Wrap fails).
//   - A protected name created in a new directory below a root (sub/.claude
//     where sub did not exist), a file an existing setting points to (a
//     hook script kept outside the protected directories) and files
//     that an agent must write to run (Claude Code's ~/.claude.json) are
//     not protected; nor is a protected name that is a symlink (named in
//     Applied.Missing: a mount cannot cover a symlink).
//   - Inside the writable paths metadata is the command's to change, as
//     is everything else there.
//   - With the network allowed, the host's unix sockets are reachable.
package sandbox
