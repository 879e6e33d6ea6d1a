package main

import (
	"context"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMCPUsageErrors: bad flags are usage errors (exit 2) with a clear
// message, before anything is served.
func TestMCPUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--sandbox", "bogus"}, "--sandbox must be off, read-only or workspace-write"},
		{[]string{"mcp", "--network", "bogus"}, "--network must be allow or deny"},
		{[]string{"mcp", "--max-terminals", "0"}, "--max-terminals must be at least 1"},
		{[]string{"mcp", "--cwd", "/nonexistent/dir"}, "--cwd"},
		{[]string{"mcp", "--cwd", dir, "--root", "/nonexistent/dir"}, "--root /nonexistent/dir"},
		{[]string{"mcp", "--cwd", "/", "--root", dir}, "outside every --root"},
		{[]string{"mcp", "--sandbox", "read-only", "--writable", dir}, "need --sandbox workspace-write"},
		{[]string{"mcp", "extra"}, "unexpected arguments"},
		{[]string{"mcp", "--connect", "/nonexistent/sock", "--sandbox", "off"}, "--connect takes no other flag (--sandbox)"},
		{[]string{"mcp", "--connect", "/nonexistent/sock"}, "--connect needs ACPTERM_MCP_TOKEN in the environment"},
		{[]string{"mcp", "--remote-tool", "ssh"}, "need --remote TARGET"},
		{[]string{"mcp", "--remote", "ftp://host"}, "--remote: "},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--cwd", dir}, "--cwd with --remote: put the directory in the target instead, ssh://host/DIR"},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--root", dir}, "--root with --remote"},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--writable", "rel"}, "a path on the target must be absolute"},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--sandbox", "read-only", "--writable", "/x"}, "need --sandbox workspace-write"},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--remote-binary", "/a", "--remote-install-dir", "/b"}, "exclude each other"},
		{[]string{"mcp", "--remote", "ssh://host/srv", "--kill-grace", "0s"}, "--kill-grace must be positive"},
	} {
		pr, pw := io.Pipe() // never written: a read would wait for ever
		var stderr strings.Builder
		code := run(context.Background(), tc.args, pr, io.Discard, &stderr)
		pw.Close()
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("acpterm %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestMCPFlagsInDocs: every flag of acpterm mcp is described in
// docs/mcp.md.
func TestMCPFlagsInDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	newMCPFlags(io.Discard).fs.VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile(`--` + f.Name + `([^a-z-]|$)`).Match(b) {
			t.Errorf("acpterm mcp --%s is not in docs/mcp.md", f.Name)
		}
	})
}

// TestRelayAddr: --connect takes a unix socket's path or a loopback
// address, never another host, to which the relay would hand the run's
// token.
func TestRelayAddr(t *testing.T) {
	for _, tc := range []struct{ in, network string }{
		{"/run/user/1/acpterm-mcp/s", "unix"},
		{"127.0.0.1:4321", "tcp"},
		{"[::1]:4321", "tcp"},
		{"10.0.0.1:4321", ""},
		{"example.com:443", ""},
		{"127.0.0.1:0", ""},
		{"127.0.0.1", ""},
		{"relative/sock", ""},
		{"", ""},
	} {
		network, _, err := relayAddr(tc.in)
		if network != tc.network || (err == nil) != (tc.network != "") {
			t.Errorf("relayAddr(%q) = %q, %v; want %q", tc.in, network, err, tc.network)
		}
	}
}
