//go:build windows

package terminal

import (
	"os/exec"
	"strings"
	"syscall"
)

// On Windows a command is killed with TerminateProcess: there are no
// signals, no grace period and no process-group kill, so descendants of
// the command may survive kill and release. Exit statuses carry the exit
// code only (a killed command has code 1).

type proc struct {
	cmd *exec.Cmd
}

type isolator struct{}

func newIsolator(*config) *isolator { return &isolator{} }

func (*isolator) mode() Isolation { return IsolationGroup }

// shellCommand runs line with cmd.exe /d /s /c; start builds the command
// line itself so that the line reaches cmd.exe unquoted.
func shellCommand(shell []string, line string) []string {
	return append(append([]string(nil), shell...), "/d", "/s", "/c", line)
}

func (*isolator) start(s *spawnSpec) (*proc, error) {
	cmd := &exec.Cmd{
		Path:        s.path,
		Args:        s.argv,
		Env:         s.env,
		Dir:         s.dir,
		Stdin:       s.stdin,
		Stdout:      s.stdout,
		Stderr:      s.stdout,
		SysProcAttr: &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP},
	}
	if s.shell {
		n := len(s.argv)
		cmd.SysProcAttr.CmdLine = syscall.EscapeArg(s.argv[0]) + " " +
			strings.Join(s.argv[1:n-1], " ") + ` "` + s.argv[n-1] + `"`
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

func (p *proc) wait() (ExitStatus, error) {
	err := p.cmd.Wait()
	if p.cmd.ProcessState == nil {
		return ExitStatus{}, err
	}
	code := uint32(p.cmd.ProcessState.ExitCode())
	return ExitStatus{ExitCode: &code}, nil
}

func (p *proc) terminate() { _ = p.cmd.Process.Kill() }

func (p *proc) kill() { _ = p.cmd.Process.Kill() }

func (p *proc) release(func(string, ...any)) {}

func (*isolator) sweep(ps []*proc) {}

func (*isolator) releaseSession(string) {}

func (*isolator) close() {}
