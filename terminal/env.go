package terminal

import (
	"runtime"
	"strconv"
	"strings"
)

// MarkerEnv is set in every command's environment to a value unique to the
// terminal. IsolationProcScan finds a terminal's escaped descendants by it;
// it also lets a command know it runs under acpterm. A request cannot
// override it.
const MarkerEnv = "ACPTERM_TERMINAL"

// defaultEnv keeps commands from waiting on a pager or a credential prompt
// that nobody will ever answer (stdin is /dev/null).
var defaultEnv = []EnvVar{
	{"PAGER", "cat"},
	{"GIT_PAGER", "cat"},
	{"GIT_TERMINAL_PROMPT", "0"},
}

// validateEnv rejects names that cannot be put in an environment block.
func validateEnv(env []EnvVar) error {
	for _, v := range env {
		switch {
		case v.Name == "":
			return invalidf("env: empty variable name")
		case strings.ContainsAny(v.Name, "=\x00"):
			return invalidf("env: invalid variable name %q (contains '=' or NUL)", v.Name)
		case strings.ContainsRune(v.Value, 0):
			return invalidf("env: value of %q contains NUL", v.Name)
		}
	}
	return nil
}

// buildEnv layers base (the host's environment), then defaultEnv, then the
// request's variables; later layers win. The order of base is kept and new
// names are appended. MarkerEnv is left out: the caller appends it.
func buildEnv(base []string, req []EnvVar) []string {
	out := make([]string, 0, len(base)+len(defaultEnv)+len(req)+1)
	index := make(map[string]int, cap(out))
	marker := envKey(MarkerEnv)
	set := func(name, kv string) {
		k := envKey(name)
		if k == marker {
			return
		}
		if i, ok := index[k]; ok {
			out[i] = kv
			return
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if runtime.GOOS == "windows" && name == "" && ok {
			// Windows keeps per-drive cwds as "=C:=C:\dir".
			if n, _, ok2 := strings.Cut(kv[1:], "="); ok2 {
				name = "=" + n
			}
		}
		if !ok || name == "" {
			continue
		}
		set(name, kv)
	}
	for _, v := range defaultEnv {
		set(v.Name, v.Name+"="+v.Value)
	}
	if i, ok := index[envKey("SHLVL")]; !ok || topLevel(out[i]) {
		set("SHLVL", "SHLVL=1")
	}
	for _, v := range req {
		set(v.Name, v.Name+"="+v.Value)
	}
	return out
}

// topLevel reports whether kv, a SHLVL=N entry, makes a shell started
// with it a top-level one. bash reads ~/.bashrc even for `bash -c LINE`
// when it is top-level and sshd seems to have started it (SSH_CLIENT is
// set), which is the environment of an exec server reached over ssh, or
// of an acpterm run by `ssh HOST acpterm …`: every command would run the
// user's interactive set-up (prompt themes, version managers, one seen
// here taking a lock that concurrent commands queued on). A command line
// is not an interactive shell, there no more than locally, where acpterm
// is started from one: SHLVL is at least 1.
func topLevel(kv string) bool {
	_, v, _ := strings.Cut(kv, "=")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return err != nil || n < 1
}

// lookupEnv finds name in a NAME=VALUE list; the last one wins, as in
// os/exec.
func lookupEnv(env []string, name string) (string, bool) {
	k := envKey(name)
	for i := len(env) - 1; i >= 0; i-- {
		n, v, ok := strings.Cut(env[i], "=")
		if ok && envKey(n) == k {
			return v, true
		}
	}
	return "", false
}

func envKey(name string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(name)
	}
	return name
}
