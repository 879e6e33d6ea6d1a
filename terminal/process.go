package terminal

// The OS side of a terminal. Each platform file provides:
//
//	type proc struct{ … }                 // one started command
//	type isolator struct{ … }             // the manager's no-orphans state
//	func newIsolator(c *config) *isolator
//	func (*isolator) mode() Isolation
//	func (*isolator) start(s *spawnSpec) (*proc, error)
//	func (*isolator) sweep(ps []*proc)    // kill escaped descendants of released terminals
//	func (*isolator) releaseSession(id string) // the session ended: free what it kept
//	func (*isolator) close()
//	func (*proc) pid() int
//	func (*proc) wait() (ExitStatus, error) // blocks until the command's process exited
//	func (*proc) terminate()              // polite stop: SIGTERM to everything
//	func (*proc) kill()                   // SIGKILL to everything reachable cheaply
//	func (*proc) release(logf)            // reap, free OS resources; after sweep
//	func shellCommand(shell []string, line string) []string

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/owner"
	"github.com/acpterm/acpterm/sandbox"
)

// spawnSpec is everything needed to start one command.
type spawnSpec struct {
	id      string // terminal ID, names the cgroup
	session string // session ID
	marker  string // value of MarkerEnv in env
	path    string // resolved executable
	argv    []string
	shell   bool // argv is a shell invocation of a line (Windows quotes it itself)
	env     []string
	dir     string
	stdin   *os.File
	stdout  *os.File // also the child's stderr
	pty     bool     // stdin is a pty's terminal end: make it the controlling terminal of a new session

	sandbox *sandbox.Policy  // nil: not confined
	applied *sandbox.Applied // set by wrap or the spawner
	// tmp is the private TMPDIR wrap made, which the caller removes; a
	// spawned command's is removed with the command.
	tmp string
}

// command is the command of s, not started, its stderr its stdout, with
// attr: what each platform needs to reach the whole of it later.
func (s *spawnSpec) command(attr *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{
		Path:        s.path,
		Args:        s.argv,
		Env:         s.env,
		Dir:         s.dir,
		Stdin:       s.stdin,
		Stdout:      s.stdout,
		Stderr:      s.stdout,
		SysProcAttr: attr,
	}
}

// wrap puts cmd under the sandbox policy, if any; it is the last step
// before cmd.Start. A failure is a *sandboxError.
func (s *spawnSpec) wrap(cmd *exec.Cmd) error {
	if s.sandbox == nil {
		return nil
	}
	sp := *s.sandbox
	if sp.Mode != sandbox.Off {
		// Made here rather than by Wrap, which may run twice (see
		// startInCgroup), and named for the terminal, for whoever finds it.
		if s.tmp == "" {
			// Named after acpterm (see package owner), so that the next
			// acpterm removes it if this one is killed before release.
			tmp, err := owner.TempDir(s.id)
			if err != nil {
				return &sandboxError{fmt.Errorf("creating the command's TMPDIR: %w", err)}
			}
			s.tmp = tmp
		}
		sp.TempDir = s.tmp
	}
	// A second try lets go of what the first one holds (the placeholders
	// of protected paths).
	_ = s.applied.Cleanup()
	a, err := sp.Wrap(cmd)
	if err != nil {
		return &sandboxError{err}
	}
	s.applied = a
	return nil
}

// sandboxError is a command that was not started because the sandbox
// could not be set up: create maps it to its own error (see startErr).
type sandboxError struct{ err error }

func (e *sandboxError) Error() string { return e.err.Error() }
func (e *sandboxError) Unwrap() error { return e.err }

// spawnSpecFor is what starts pl's command, marked with marker, its
// input and output left for the caller (pipes, or a pty).
func (m *Manager) spawnSpecFor(pl plan, marker string) *spawnSpec {
	info := pl.info
	// argv[0] of an exec'd command stays as the agent wrote it.
	argv := append([]string{info.Argv[0]}, info.Argv[1:]...)
	if !info.Shell {
		argv[0] = info.Command
	}
	return &spawnSpec{
		id:      string(info.TerminalID),
		session: string(info.SessionID),
		marker:  marker,
		path:    pl.path,
		argv:    argv,
		shell:   info.Shell,
		env:     append(pl.env, MarkerEnv+"="+marker),
		dir:     info.Cwd,
		sandbox: m.sandboxFor(info),
	}
}
