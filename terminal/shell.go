package terminal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// posixShells are the basenames of $SHELL values trusted to run "-c LINE"
// with POSIX semantics. Others (fish, csh, tcsh, nu, pwsh, …) would parse
// an agent's line differently, so /bin/sh is used instead.
var posixShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true,
	"mksh": true, "oksh": true, "loksh": true, "pdksh": true, "ksh93": true,
	"ash": true, "yash": true, "posh": true, "busybox": true,
}

// DefaultShell is the shell used for args-less commands when
// Options.Shell is empty: $SHELL when it is an absolute path to an
// executable POSIX shell (sh, bash, dash, zsh, the ksh family, ash, yash,
// posh, busybox), else /bin/sh. On Windows it is %ComSpec% (cmd.exe).
func DefaultShell() string {
	if s := os.Getenv("SHELL"); isPOSIXShell(s) && filepath.IsAbs(s) && isExecutable(s) {
		return s
	}
	return defaultShellPath
}

func isPOSIXShell(path string) bool {
	base := filepath.Base(path)
	if posixShells[base] {
		return true
	}
	// Versioned names such as bash5 or busybox-sh variants such as
	// busybox.static, busybox-sh.
	for _, p := range []string{"bash", "zsh", "busybox"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// shellArgv is the argv prefix a shell line is appended to after "-c".
func shellArgv(shell string) []string {
	if shell == "" {
		shell = DefaultShell()
	}
	if strings.HasPrefix(filepath.Base(shell), "busybox") {
		// busybox picks the applet from argv[0] or its first argument.
		return []string{shell, "sh"}
	}
	return []string{shell}
}

// lookPath finds the executable for an argv command the way exec.LookPath
// would, but with the PATH of the command's own environment (env) rather
// than the host's, and relative names resolved against the command's cwd
// rather than the host's.
func lookPath(command, cwd string, env []string) (string, error) {
	if strings.ContainsRune(command, filepath.Separator) || strings.ContainsRune(command, '/') {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	path, _ := lookupEnv(env, "PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			// Relative PATH entries would depend on the cwd, which is how
			// exec.ErrDot attacks work; skip them like exec.LookPath does.
			continue
		}
		for _, name := range executableNames(command, env) {
			p := filepath.Join(dir, name)
			if checkExecutable(p) == nil {
				return p, nil
			}
		}
	}
	return "", os.ErrNotExist
}

func isExecutable(path string) bool { return checkExecutable(path) == nil }

// checkExecutable says why path cannot be run as a command, or nil.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	return checkMode(fi)
}
