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
		{[]string{"--remote", "ssh://h/srv", "--cwd", "/tmp"}, "--cwd is not carried to a --remote target (the session's directory is the target's: ssh://h/srv)"},
		{[]string{"--remote", "ssh://h", "--root", "/tmp"}, "--root is not carried"},
		{[]string{"--remote", "ssh://h", "--timeout", "1s"}, "--timeout is not carried"},
		{[]string{"--remote", "ssh://h", "--shell", "/bin/bash"}, "--shell is not carried"},
		{[]string{"--remote", "ssh://h", "--sandbox-agent"}, "--sandbox-agent with --remote"},
		{[]string{"--remote", "ssh://h", "--writable", "rel/dir"}, "--writable rel/dir: with --remote, a path on the target must be absolute"},
		{[]string{"--remote", "ssh://h", "--remote-binary", "/x", "--remote-install-dir", "/y"}, "exclude each other"},
	} {
		args := append(append([]string{"run"}, tc.args...), "-p", "x", "--", "/bin/true")
		r := acpterm(t, opts{plain: true}, args...)
		if r.code != client.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, client.ExitUsage, tc.want)
		}
	}
}
