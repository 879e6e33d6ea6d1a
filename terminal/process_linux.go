//go:build linux

package terminal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/childexit"
	"github.com/acpterm/acpterm/sandbox"
	"golang.org/x/sys/unix"
)

// One command on Linux: starting it (in its cgroup, through a sandbox
// spawner or wrapped), waiting for it without reaping it, signalling it
// and releasing it.

// proc is one started command.
type proc struct {
	cmd    *exec.Cmd      // started by the manager, directly or wrapped
	child  *sandbox.Child // or started by a sandbox spawner
	cgroup string         // the terminal's own cgroup directory, "" when not in one
	scan   bool           // find escaped descendants by marker at sweep time
	marker string
}

func newCmd(s *spawnSpec) *exec.Cmd {
	// Its own process group, so that signals reach its children.
	// Pdeathsig: a host that is SIGKILLed takes the command down with
	// it; what the command started is left to the cgroup, which the
	// next host removes as stale. The signal fires when the forking
	// OS thread exits (golang/go#27505), which the runtime does only
	// for a goroutine that exits locked to its thread: never start
	// terminals from such a goroutine.
	return s.command(sysProcAttr(s.pty))
}

// sysProcAttr is a command's: its own process group, or, on a pty, its
// own session (whose process group has the same ID) with the pty as its
// controlling terminal; Setpgid with Setsid would fail (EPERM).
func sysProcAttr(pty bool) *syscall.SysProcAttr {
	if pty {
		return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func (iso *isolator) start(s *spawnSpec) (*proc, error) {
	p := &proc{marker: s.marker}
	if iso.mode() == IsolationCgroup {
		if err, fatal := iso.startInCgroup(p, s); err == nil {
			return p, nil
		} else if fatal {
			return nil, err // not the cgroup's fault
		}
	}
	p.scan = iso.mode() != IsolationGroup
	if err := iso.launch(p, s, ""); err != nil {
		return nil, err
	}
	return p, nil
}

// startInCgroup starts the command directly inside a new cgroup, so that
// not even its first fork can escape. On a cgroup failure it falls back
// and returns the error; when the command itself cannot start, fatal is
// set and the error is the command's.
func (iso *isolator) startInCgroup(p *proc, s *spawnSpec) (err error, fatal bool) {
	dir := filepath.Join(iso.dir, s.id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		iso.fallback(err)
		return err, false
	}
	err = iso.launch(p, s, dir)
	if err == nil {
		p.cgroup = dir
		return nil, false
	}
	_ = unix.Rmdir(dir)
	var se *sandboxError
	if errors.As(err, &se) {
		return err, true
	}
	// clone3 into a cgroup can fail where a plain start works (old kernel,
	// a parent with controllers enabled, …). Try once without it.
	if err2 := iso.launch(p, s, ""); err2 != nil {
		return err2, true
	}
	iso.fallback(err)
	p.scan = true
	return nil, false
}

// launch starts the command, in the cgroup directory cg unless cg is "":
// through the session's sandbox spawner when the command is sandboxed,
// else (or when no spawner can be had) wrapped and started here.
func (iso *isolator) launch(p *proc, s *spawnSpec, cg string) error {
	if sp := s.sandbox; sp != nil && (sp.Mode != sandbox.Off || sp.Network != sandbox.AllowNetwork) {
		err := iso.spawn(p, s, cg)
		if err == nil || !errors.Is(err, errNoSpawner) {
			return err
		}
	}
	cmd := newCmd(s)
	// Wrap keeps SysProcAttr, to which cgroup.Start adds the cgroup.
	if err := s.wrap(cmd); err != nil {
		return err
	}
	var err error
	if cg != "" {
		err = cgroup.Start(cmd, cg)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return err
	}
	p.cmd = cmd
	return nil
}

func (p *proc) pid() int {
	if p.child != nil {
		return p.child.Pid
	}
	return p.cmd.Process.Pid
}

// wait blocks until the command's process has exited, without reaping it.
// The zombie keeps its PID, and with it the process group ID, reserved
// until release, so signalling the group later cannot hit a stranger that
// reused the number.
func (p *proc) wait() (ExitStatus, error) {
	if p.child != nil {
		// The helper is the parent; it keeps the zombie until release
		// just the same.
		st, err := p.child.Wait()
		if err != nil {
			return ExitStatus{}, err
		}
		return exitStatus(st.Code, st.Signal), nil
	}
	st, err := childexit.Wait(p.pid())
	if err != nil {
		return ExitStatus{}, err
	}
	return exitStatus(st.Code, st.Signal), nil
}

// terminate sends SIGTERM to the process group and, in a cgroup, to every
// member (descendants that called setsid get the same chance to clean up).
func (p *proc) terminate() {
	p.signalGroup(unix.SIGTERM)
	if p.cgroup != "" {
		cgroup.Signal(p.cgroup, unix.SIGTERM)
	}
}

// kill sends SIGKILL to the process group and to the whole cgroup.
func (p *proc) kill() {
	p.signalGroup(unix.SIGKILL)
	if p.cgroup != "" {
		_ = cgroup.Kill(p.cgroup)
	}
}

func (p *proc) signalGroup(sig syscall.Signal) {
	if p.child != nil {
		p.child.Signal(sig, true)
		return
	}
	signalGroup(p.pid(), sig)
}

// release reaps the command's process (through its spawner, which also
// removes its TMPDIR) and removes its cgroup.
func (p *proc) release(logf func(string, ...any)) {
	if p.child != nil {
		if err := p.child.Release(); err != nil {
			logf("terminal: releasing pid %d: %v", p.child.Pid, err)
		}
	} else {
		_ = p.cmd.Wait()
	}
	if p.cgroup != "" {
		// RemoveTree: a command running as root may have made child
		// cgroups of its own.
		if err := cgroup.RemoveTree(p.cgroup); err != nil {
			logf("terminal: removing cgroup %s: %v", p.cgroup, err)
		}
	}
}
