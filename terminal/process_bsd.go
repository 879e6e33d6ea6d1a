//go:build unix && !linux

package terminal

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// On Unix systems other than Linux only the process group is available:
// no cgroups, and no portable way to read another process's environment.

func (*isolator) start(s *spawnSpec) (*proc, error) {
	return s.startProc(s.command(&syscall.SysProcAttr{Setpgid: true}))
}

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

func (*isolator) sweep(ps []*proc) {
	for _, p := range ps {
		p.kill()
	}
}
