//go:build unix && !linux

package terminal

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// On Unix systems other than Linux only the process group is available:
// no cgroups, and no portable way to read another process's environment.

type proc struct {
	cmd *exec.Cmd
}

type isolator struct{}

func newIsolator(*config) *isolator { return &isolator{} }

func (*isolator) mode() Isolation { return IsolationGroup }

func (*isolator) start(s *spawnSpec) (*proc, error) {
	cmd := &exec.Cmd{
		Path:        s.path,
		Args:        s.argv,
		Env:         s.env,
		Dir:         s.dir,
		Stdin:       s.stdin,
		Stdout:      s.stdout,
		Stderr:      s.stdout,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := s.wrap(cmd); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd}, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// wait reaps the process: without waitid(WNOWAIT) the group ID is not
// pinned after exit, a known limit of non-Linux systems.
func (p *proc) wait() (ExitStatus, error) {
	err := p.cmd.Wait()
	if p.cmd.ProcessState == nil {
		return ExitStatus{}, err
	}
	return statusFromWait(p.cmd.ProcessState.Sys().(syscall.WaitStatus)), nil
}

func (p *proc) terminate() { signalGroup(p.pid(), unix.SIGTERM) }

func (p *proc) kill() { signalGroup(p.pid(), unix.SIGKILL) }

func (p *proc) release(func(string, ...any)) {}

func (*isolator) sweep(ps []*proc) {
	for _, p := range ps {
		p.kill()
	}
}

func (*isolator) releaseSession(string) {}

func (*isolator) close() {}
