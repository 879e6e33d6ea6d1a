//go:build windows

package terminal

import (
	"io/fs"
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

// checkMode accepts any file: Windows runs a file by its extension, which
// executableNames looks at, not by a mode.
func checkMode(fs.FileInfo) error { return nil }

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
