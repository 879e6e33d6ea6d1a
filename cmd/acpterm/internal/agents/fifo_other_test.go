//go:build !unix

package agents

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
