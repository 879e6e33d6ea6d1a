//go:build windows

package terminal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

var defaultShellPath = func() string {
	if s := os.Getenv("ComSpec"); s != "" {
		return s
	}
	return `C:\Windows\System32\cmd.exe`
}()

func isExecutable(path string) bool { return checkExecutable(path) == nil }

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	return nil
}

// executableNames tries the name as given when it has an extension, then
// with each PATHEXT extension, as cmd.exe does.
func executableNames(command string, env []string) []string {
	var names []string
	if filepath.Ext(command) != "" {
		names = append(names, command)
	}
	exts, ok := lookupEnv(env, "PATHEXT")
	if !ok || exts == "" {
		exts = ".com;.exe;.bat;.cmd"
	}
	for _, e := range strings.Split(strings.ToLower(exts), ";") {
		if e != "" && e[0] == '.' {
			names = append(names, command+e)
		}
	}
	return names
}
