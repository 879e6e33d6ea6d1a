//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Wrap returns an error for any policy that would restrict the command:
// the sandbox is implemented on Linux only, and a command must not run
// unconfined when confinement was asked for — not even with BestEffort,
// which degrades on older Linux kernels but has nothing to degrade to
// here. The plan: Seatbelt profiles run through sandbox-exec on macOS,
// an AppContainer with a Job object on Windows.
func (p *Policy) Wrap(cmd *exec.Cmd) (*Applied, error) {
	if p.Mode == Off && p.Network == AllowNetwork {
		return &Applied{Mode: Off, Network: AllowNetwork}, nil
	}
	return nil, fmt.Errorf("%w: the sandbox is implemented on Linux only, not on %s: cannot enforce %s with network %s", ErrUnsupported, runtime.GOOS, p.Mode, p.Network)
}

// helperMain cannot be reached from this package's Wrap; a stray plan in
// the environment must not be ignored either.
func helperMain(string) {
	fail(ExitSetupFailed, "the sandbox helper is implemented on Linux only, not on %s", runtime.GOOS)
}

// Support reports that nothing is available.
func Support() Report {
	return Report{OS: runtime.GOOS, Init: initCalled.Load()}
}
