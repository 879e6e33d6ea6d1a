package sessionstore

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// StateDir is acpterm's directory for state worth keeping between runs
// but not worth backing up: $XDG_STATE_HOME/acpterm, else
// ~/.local/state/acpterm, on Unix (macOS included, as other command-line
// tools there do); the user's configuration directory's acpterm
// elsewhere (%AppData%\acpterm on Windows). It is not created.
func StateDir() (string, error) {
	return stateDir(runtime.GOOS, os.Getenv, os.UserHomeDir, os.UserConfigDir)
}

func stateDir(goos string, getenv func(string) string, home, config func() (string, error)) (string, error) {
	switch goos {
	case "windows", "plan9", "js", "wasip1":
		dir, err := config()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "acpterm"), nil
	}
	// The XDG spec: a relative path is invalid and is ignored.
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acpterm"), nil
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	if h == "" {
		return "", errors.New("neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(h, ".local", "state", "acpterm"), nil
}
