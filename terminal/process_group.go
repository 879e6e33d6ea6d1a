//go:build !linux

package terminal

import "os/exec"

// Outside Linux a command is held by its process (group) alone: no
// cgroups, no waiting without reaping, no environment of another process
// to read. What the BSDs and Windows share of that is here.

type proc struct {
	cmd *exec.Cmd
}

type isolator struct{}

func newIsolator(*config) *isolator { return &isolator{} }

func (*isolator) mode() Isolation { return IsolationGroup }

// startProc puts cmd under s's sandbox, if any, and starts it.
func (s *spawnSpec) startProc(cmd *exec.Cmd) (*proc, error) {
	if err := s.wrap(cmd); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd}, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) release(func(string, ...any)) {}

func (*isolator) releaseSession(string) {}

func (*isolator) close() {}
