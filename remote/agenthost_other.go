//go:build !unix

package remote

import "os/exec"

type hostSignal int

const (
	sigTerm hostSignal = iota
	sigKill
)

type hosted struct{}

func startHosted(*exec.Cmd, func(string, ...any)) (*hosted, error) { return nil, ErrAgentHost }

func (*hosted) signal(hostSignal) {}

func (*hosted) killRest() error { return nil }

func signalOf(*exec.ExitError) (int, bool) { return 0, false }
