//go:build windows

package terminal

import (
	"strings"
	"syscall"
)

// On Windows a command is killed with TerminateProcess: there are no
// signals, no grace period and no process-group kill, so descendants of
// the command may survive kill and release. Exit statuses carry the exit
// code only (a killed command has code 1).

// shellCommand runs line with cmd.exe /d /s /c; start builds the command
// line itself so that the line reaches cmd.exe unquoted.
func shellCommand(shell []string, line string) []string {
	return append(append([]string(nil), shell...), "/d", "/s", "/c", line)
}

func (*isolator) start(s *spawnSpec) (*proc, error) {
	cmd := s.command(&syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP})
	if s.shell {
		n := len(s.argv)
		cmd.SysProcAttr.CmdLine = syscall.EscapeArg(s.argv[0]) + " " +
			strings.Join(s.argv[1:n-1], " ") + ` "` + s.argv[n-1] + `"`
	}
	return s.startProc(cmd)
}

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

func (*isolator) sweep(ps []*proc) {}
