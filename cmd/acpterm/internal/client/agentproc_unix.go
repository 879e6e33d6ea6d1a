//go:build unix

package client

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// describeExit says how the agent process ended, from its Wait error.
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}
