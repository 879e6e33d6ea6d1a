//go:build !unix

package client

import (
	"errors"
	"fmt"
	"os/exec"
)

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}
