//go:build unix

package terminal

import (
	"errors"
	"io/fs"
	"os"
)

const defaultShellPath = "/bin/sh"

func isExecutable(path string) bool { return checkExecutable(path) == nil }

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

func executableNames(command string, _ []string) []string { return []string{command} }
