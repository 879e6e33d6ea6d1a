package sandbox

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Cmd is a command for Spawner.Start: the fields of exec.Cmd and
// syscall.SysProcAttr that a spawned command can have.
type Cmd struct {
	Path string   // the executable, absolute
	Args []string // argv, including argv[0]
	Env  []string // the whole environment; Start adds TMPDIR
	Dir  string   // working directory; "" is the helper's (the host's at NewSpawner)

	// Stdin, Stdout and Stderr become the command's fds 0, 1 and 2; nil
	// means /dev/null. They are passed to the helper (SCM_RIGHTS) and
	// closed there once the command has started; the caller keeps its own.
	Stdin, Stdout, Stderr *os.File

	Setpgid bool // start a new process group, led by the command
	// Setsid starts a new session, led by the command (its process group
	// too; Setpgid is then ignored), and with Setctty Stdin, a terminal,
	// becomes its controlling terminal: see Spawner.OpenPTY.
	Setsid    bool
	Setctty   bool
	Pdeathsig syscall.Signal // sent to the command when the helper dies
	// Cgroup, if set, is an open cgroup v2 directory the command starts in
	// (clone3 with CLONE_INTO_CGROUP), so that not even its first fork
	// happens outside it.
	Cgroup *os.File

	// ProxyClient names the command in the questions the proxy of a
	// ProxyNetwork spawner asks (netproxy.Options.Ask): the command's
	// proxy URLs carry credentials of its own, valid until Release.
	ProxyClient string
}

// ExitStatus is how a spawned command ended.
type ExitStatus struct {
	Code   int            // exit code, when Signal is 0
	Signal syscall.Signal // the signal that ended it; 0 when it exited
}

// ErrSpawnerDead is wrapped by the errors of Spawner.Start and Child.Wait
// when the helper has exited, was killed, or stopped answering (see
// ReplyTimeout). Starting a new Spawner is the remedy.
var ErrSpawnerDead = errors.New("sandbox: the spawner's helper is gone")

// ReplyTimeout bounds how long the host waits for the helper: to answer a
// start, and to report the exit of a command whose process is seen to
// have exited. The helper answers in microseconds unless it was stopped
// (the commands it started may signal it: they share its Landlock
// domain); past the timeout the host kills it and says so with
// ErrSpawnerDead, rather than hang.
const ReplyTimeout = 10 * time.Second
