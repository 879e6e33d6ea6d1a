// Package terminal is the client-side runtime of ACP terminals: it runs
// the commands an agent asks for with terminal/create and serves
// terminal/output, terminal/wait_for_exit, terminal/kill and
// terminal/release for them.
//
// A [Manager] implements acp.TerminalHandler, so a client that embeds one
// advertises clientCapabilities.terminal and serves the five methods:
//
//	m := terminal.NewManager(&terminal.Options{
//		Policy: &terminal.Policy{
//			Decide: func(ctx context.Context, info terminal.Info) terminal.Decision {
//				if askUser(ctx, info.Argv, info.Cwd) {
//					return terminal.Allow()
//				}
//				return terminal.Deny("the user said no")
//			},
//			Timeout: 10 * time.Minute,
//			Roots:   []string{workspace},
//		},
//	})
//	defer m.Close() // kills and releases everything
//	conn, err := acp.StartAgent(cmd, myClient{Manager: m, …}, nil)
//	…
//	// session/new through the manager: once the agent has named the
//	// session, its terminals run in workspace unless a create gives a cwd.
//	sess, err := m.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: workspace})
//	…
//	m.ReleaseSession(ctx, sess.SessionID) // when the session ends
//
// NewSessionOn, LoadSessionOn and ResumeSessionOn send the request on the
// acp.ClientConn and give the session the request's cwd; a host that
// opens sessions some other way (or moves one) calls SetSessionCwd itself.
//
// The same operations exist as plain Go methods (Create, Output, Wait,
// Kill, Release), keyed by session and terminal ID (acp.SessionID and
// acp.TerminalID, the types of the protocol's messages, so IDs pass
// between the two without conversion), for hosts that do not speak ACP or
// want to run commands themselves:
//
//	info, err := m.Create(ctx, terminal.Request{SessionID: "s", Command: "go test ./..."})
//	st, err := m.Wait(ctx, "s", info.TerminalID)
//	out, err := m.Output(ctx, "s", info.TerminalID)
//	fmt.Print(out.Text, st)
//	err = m.Release(ctx, "s", info.TerminalID)
//
// # One runtime, here or elsewhere
//
// [Runtime] is what a client needs of a terminal runtime: the five ACP
// methods, CreateTerminalHeld, Subscribe, the session's cwd
// (SetSessionCwd, NewSessionOn), ReleaseSession, Terminals, KillAll and
// Close. A *Manager is one, for commands on this machine; a
// *remote.Client is another, for commands on an SSH host, in a container
// or a pod (package remote, remote.Connect). A client written against
// Runtime runs either way:
//
//	type myClient struct {
//		terminal.Runtime // serves terminal/*; advertises terminals only
//		…
//	}
//	var rt terminal.Runtime = terminal.NewManager(opts) // or remote.Connect(ctx, "ssh://devbox/srv", …)
//	conn, err := acp.StartAgent(cmd, myClient{Runtime: rt}, nil)
//	sess, err := rt.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: dir})
//
// # What runs, and how
//
// An ACP terminal/create's command is a shell line or a program, and args
// decide which. With no args (absent or empty), command is a shell line
// run as SHELL -c LINE, where SHELL
// is Options.Shell or DefaultShell ($SHELL when it is a POSIX shell, else
// /bin/sh). With args, command is executed directly with exactly those
// arguments; it is looked up in the PATH of the command's own environment,
// and a missing executable fails the create. Each command gets stdin from
// /dev/null, the host environment (Options.Env, default os.Environ) with
// PAGER=cat, GIT_PAGER=cat and GIT_TERMINAL_PROMPT=0 on top, and SHLVL=1
// where the host's is unset or below 1 (bash reads ~/.bashrc for bash -c
// when it is a top-level shell that sshd seems to have started), then the
// request's env, then MarkerEnv (ACPTERM_TERMINAL), which a request cannot
// override. A host of its own may ask for a pipe instead of /dev/null
// (Request.Stdin): Manager.Write writes it, at most MaxStdinWrite bytes a
// call and bounded by its ctx, and Manager.CloseStdin closes it; it closes
// at release, and a write after the command exited fails with
// ErrStdinClosed. terminal/create has no field for it: an agent or a host
// that knows acpterm asks in its _meta (MetaStdin, true), as it asks for a
// pty (MetaPTY), and types with the _acpterm/terminal/* methods that
// InputHandler serves on any Input. The cwd must be absolute; an absent
// cwd means the session's
// (NewSessionOn, SetSessionCwd), else Options.DefaultCwd, else the create
// fails. With Policy.Roots the cwd's real path must lie inside a root.
//
// # Output
//
// The command's stdout and stderr are the write end of one pipe, so they
// arrive merged and in order, and the manager reads the other end itself.
// It keeps the newest OutputByteLimit bytes (clamped to
// Policy.OutputCeiling, 16 MiB by default, which is also the limit when the
// request has none) in a ring buffer that grows on demand up to the limit:
// memory is O(limit) whatever the volume. When bytes were dropped the text
// starts at the next UTF-8 character start, and truncated stays true.
// A limit of 0 keeps nothing (truncated turns true at the first byte).
// Invalid UTF-8 becomes U+FFFD, one per maximal invalid subpart, as Rust's
// from_utf8_lossy and the WHATWG decoder do ("\xe2\x82" is one U+FFFD,
// "\xff\xfe" two). The limit bounds the text sent, so when those
// three-byte replacements make it longer, its oldest characters are dropped
// too (and truncated is true). While the command runs, an incomplete
// character at the end is held back until its remaining bytes arrive.
//
// # PTY terminals
//
// A request with PTY set (Linux only; terminal/create has no field for
// it) runs its command on a pseudo-terminal of that size, 80x24 by
// default: the pty is the command's stdin, stdout, stderr and controlling
// terminal, in a session of its own, and TERM is xterm-256color unless
// the request sets it, so that programs behave as they do for a person
// (colours, progress bars, password prompts, full-screen programs). Output
// then returns what a screen would show, rendered as plain text: the
// lines that scrolled off the top, then the screen, each line's trailing
// blanks trimmed; a progress bar redrawn after CR reads as its last
// state, colours and other sequences vanish, and a full-screen program's
// last screen stays readable after it leaves the alternate screen. The
// text is the newest OutputByteLimit bytes, truncated sticky, as for
// pipes; subscribers still get the raw bytes. Manager.Write types into the
// terminal (the line discipline echoes it unless the program turned echo
// off, as password prompts do), Manager.Resize resizes it and
// Manager.PTYSize reports its size. A pty costs more kernel time than a
// pipe for bulk output, which is why pipes are the default.
//
// A sandboxed command's pty is opened in the private devpts of its
// session's sandbox helper, so the command finds it as /dev/pts/0 and may
// open /dev/tty, which reaches its own terminal only: the helper has no
// controlling terminal, so a pipe command's /dev/tty fails with ENXIO.
//
// # Exit, wait and kill
//
// Wait returns when the command's process exits, not when the pipe closes:
// after the exit the manager reads the pipe until it is empty, without
// waiting for more, and then publishes the status. A write to a pipe is
// complete when it returns, so the pipe then holds everything the process
// wrote, and everything its waited-for children wrote (`make | tee log`):
// the output is complete, and `sleep 60 & echo started` completes at once.
// Output that background processes write later is not captured, and
// descendants that keep the pipe full stop being read after
// Options.DrainTimeout (100 ms). Exit statuses carry an exit code, or a
// POSIX signal name ("SIGTERM", "SIGKILL") and no exit code.
//
// Kill sends SIGTERM to the command's process group (and cgroup), waits up
// to Options.KillGrace (2 s) for the command to exit, then sends SIGKILL to
// all of them. Release kills a running command the same way, waits for it,
// kills whatever is left of its descendants and frees the terminal.
// Policy.Timeout kills a command the same way when it runs too long; the
// agent sees the signal, the host sees Output.TimedOut and Event.TimedOut.
//
// # No orphans
//
// Every command leads its own process group. That reaches ordinary
// children but not descendants that call setsid or double-fork, so on
// Linux the manager also tracks each terminal's processes one of two ways
// (Options.Isolation, reported by Manager.Isolation):
//
//   - IsolationCgroup, chosen when possible: the manager makes a cgroup v2
//     directory under its own cgroup (or Options.CgroupParent), named
//     acpterm-PID-START-terms-RANDOM (see internal/proc/cgroup), and one child
//     per terminal; the command is started inside it (clone3 with CLONE_INTO_CGROUP), so no fork can
//     escape, and release writes cgroup.kill and removes the directory.
//     Directories left by a crashed host are cleaned up by the next
//     manager. It needs a writable cgroup v2 tree (root, or a delegated
//     subtree such as a systemd user service) and Linux 5.14.
//   - IsolationProcScan, the fallback: release scans /proc/*/environ for
//     the terminal's marker variable and kills every match (through a
//     pidfd, so a reused PID is never hit), repeating until a scan finds
//     nobody. A descendant that both leaves the process group and clears
//     its environment (env -i) escapes it.
//
// The command's own process is not reaped until release: the zombie keeps
// its PID, and so the process group ID, from being reused, which makes
// signalling the group after the command exited safe. The manager does not
// use PR_SET_CHILD_SUBREAPER: it is process-wide and would leave the host
// to reap every orphan of every descendant, which a library cannot do
// without stealing exit statuses from the host's own os/exec children.
//
// Other Unix systems use the process group only (IsolationGroup), and the
// command is reaped at exit. On Windows the package builds but is minimal:
// shell lines run with %ComSpec% /d /s /c, kill is TerminateProcess on the
// command alone (no grace period, descendants survive, exit code 1), exit
// statuses have no signal, and a descendant holding the output pipe delays
// Wait by up to DrainTimeout (pipes there have no read deadlines) and can
// delay release.
//
// # Limits and policy
//
// Policy bounds the live (created, not released) terminals per session
// (64) and of all sessions together (256: the agent names the session),
// the output ceiling (16 MiB) and, optionally, the run time of each
// command; Policy.Decide sees every create, resolved, before it starts.
//
// # Sandbox
//
// Policy.Sandbox (nil: off) confines every command with package sandbox:
// the host's main must call sandbox.Init first. The command is wrapped
// just before it starts, so it keeps its pid, process group and cgroup;
// in any mode but Off it gets a private TMPDIR, created for the terminal
// and removed at release. A WorkspaceWrite policy without Writable paths
// writes in Policy.Roots (the command's cwd when there are no roots) and
// in caches of its own below sandbox.DefaultCacheDir(), which its GOCACHE,
// GOMODCACHE, npm_config_cache and the like point at, checked at every
// start; the user's caches stay read-only. Info.Sandbox records what was applied. When
// the kernel cannot enforce the policy, create fails with ErrDenied (see
// Errors) and nothing runs, unless the policy has BestEffort.
//
// A session's sandboxed commands are started by a helper process of its
// own (the host binary, started again). When the policy fixes what
// commands may write (Writable, or Roots), NewManager starts the first
// session's helper at once, so that the first create does not wait for
// it; Close stops it, used or not.
//
// # Errors
//
// Every error a request gets is an *Error of one kind, for errors.Is; the
// methods of acp.TerminalHandler send each kind with one wire code:
//
//   - ErrInvalid (-32602, acp.CodeInvalidParams): a malformed request
//     (relative or missing cwd, bad env name, missing executable).
//   - ErrNotFound (-32602 too): any unknown, released or other session's
//     terminal. Those three cases get one identical message,
//     `terminal "ID" not found`, so nothing reveals whether another
//     session has a terminal of that ID.
//   - ErrDenied (-32003, acp.CodePermissionDenied): Policy.Decide refused
//     (its reason is in the message), the session has too many live
//     terminals, the cwd is outside Policy.Roots, or this system cannot
//     enforce Policy.Sandbox (the error also wraps sandbox.ErrUnsupported
//     and names what is missing). Not an internal error: nothing failed,
//     and asking again will not make the host run the command unconfined.
//   - ErrClosed, and no kind at all when the host failed or the host's
//     main does not call sandbox.Init (sandbox.ErrNoInit): -32603,
//     acp.CodeInternalError.
//   - A request cancelled by $/cancel_request returns context.Canceled,
//     which the connection sends as -32800; a cancelled wait leaves the
//     command running.
//
// # Watching terminals
//
// Subscribe delivers Created, Output (raw bytes, in order), Exited and
// Released events, for all sessions, one session, or one terminal (the
// latter replays what happened before it subscribed). A subscriber never
// slows a command down: each has a bounded queue (Options.SubscriberBuffer),
// and output that does not fit is dropped and counted in the next event's
// Dropped field. After release the final output stays available to the
// host through Snapshot, within Options.RetainBytes, but no longer through
// the protocol.
//
// When is a turn's output complete? A terminal's is once its EventExited
// has been received: the exit is published after the pipe was read empty,
// so all the terminal's Output events come before it (Event.Dropped counts
// what a slow subscriber missed). A turn's is once that holds for every
// terminal created in it. The answer to session/prompt is no such signal:
// a ClientConn hands it over after the agent's session/update
// notifications, but the terminal events come from the manager's own
// goroutines, and an agent may answer with a command still running (or
// never released). So a client that prints a turn's output and then its
// end waits, after Prompt returns, for the EventExited or EventReleased of
// each terminal the turn created (EventCreated, by session), bounded by
// what it is willing to wait for a command the agent left running.
//
// # Tests under the race detector
//
// A program built with -race sleeps 1 s when it exits (the race detector's
// atexit_sleep_ms), and a sandboxed command is started by a helper process
// that is the host binary started again: under -race every helper exit
// then costs a second, which looks like a hang in a test that creates and
// releases sandboxed terminals. Set GORACE=atexit_sleep_ms=0 in the test
// environment (the tests of this module do) to remove it.
package terminal
