package main

import (
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
)

// TestRemoteFlags: what --remote refuses is refused before anything is
// started, as a usage error naming the flag.
func TestRemoteFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote", "ftp://host"}, `--remote: invalid target "ftp://host": unknown scheme "ftp"`},
		{[]string{"--remote", "ssh://-oProxyCommand=x"}, "--remote: "},
		{[]string{"--remote-binary", "/x"}, "need --remote TARGET"},
		{[]string{"--remote-tool-arg=-v"}, "need --remote TARGET"},
		{[]string{"--remote-agent"}, "need --remote TARGET"},
		{[]string{"--remote", "ssh://h/srv", "--cwd", "/tmp"}, "--cwd with --remote: put the directory in the target instead, ssh://h/DIR (the session's directory, and the one the commands and fs/* are confined to, is the target's: ssh://h/srv)"},
		{[]string{"--remote", "ssh://h", "--root", "/tmp"}, "--root with --remote: put the directory in the target instead, ssh://h/DIR "},
		{[]string{"--remote", "k8s://ns/pod", "--cwd", "/tmp"}, "put the directory in the target instead, k8s://ns/pod:/DIR "},
		// The limits go on to the target, checked here as for a run here.
		{[]string{"--remote", "ssh://h", "--max-terminals", "0"}, "--max-terminals must be at least 1, not 0"},
		{[]string{"--remote", "ssh://h", "--kill-grace", "0s"}, "--kill-grace must be positive"},
		{[]string{"--remote", "ssh://h", "--writable", "rel/dir"}, "--writable rel/dir: with --remote, a path on the target must be absolute"},
		{[]string{"--remote", "ssh://h", "--remote-binary", "/x", "--remote-install-dir", "/y"}, "exclude each other"},
		{[]string{"--remote", "ssh://h", "--readable", "rel/dir"}, "--readable rel/dir: with --remote, a path on the target must be absolute"},
		{[]string{"--remote", "ssh://h", "--remote-agent", "--mcp"}, "--mcp and --remote-agent exclude each other"},
	} {
		args := append(append([]string{"run"}, tc.args...), "-p", "x", "--", "/bin/true")
		r := acpterm(t, opts{plain: true}, args...)
		if r.code != client.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, client.ExitUsage, tc.want)
		}
	}
}
