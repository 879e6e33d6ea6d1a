package remote_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
)

// TestConnectSSH: Connect over a real sshd gives a ready client whose
// target enforces the sandbox asked for, and describes it; a refused
// connection fails in ssh's own words.
func TestConnectSSH(t *testing.T) {
	e := needSSH(t)
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	p := &sandbox.Policy{Mode: sandbox.ReadOnly, Network: sandbox.DenyNetwork, WithoutMountNamespace: true}
	c, err := remote.Connect(ctx, "ssh://target"+dir, &remote.ConnectOptions{Sandbox: p, ToolArgs: []string{"-F", e.config}, Binary: e.bin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.Hello()
	if h.DefaultCwd != dir || h.Sandbox.Mode != "read-only" || h.Sandbox.Network != "deny" {
		t.Errorf("hello %+v", h)
	}
	if a := c.Sandbox(); a == nil || a.Mode != sandbox.ReadOnly || a.Network != sandbox.DenyNetwork {
		t.Errorf("Sandbox() = %+v", a)
	}
	if in := c.Installed(); in == nil || in.Path != e.bin {
		t.Errorf("Installed() = %+v, want the binary named", in)
	}

	_, err = remote.Connect(ctx, "ssh://target:1"+dir, &remote.ConnectOptions{ToolArgs: []string{"-F", e.config}, Binary: e.bin})
	var de *remote.DialError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("Connect to a closed port: %v, want ssh's Connection refused", err)
	}
}

// TestConnectSSHAcceptsLessOnlyWhenAsked: a target without user
// namespaces (acpterm started there in a user namespace that may make no
// other) cannot give what only a mount namespace gives: Connect fails as
// a local create would, unless the policy accepts less; and a network it
// cannot deny fails whatever the policy accepts.
func TestConnectSSHAcceptsLessOnlyWhenAsked(t *testing.T) {
	e := needSSH(t)
	if os.Geteuid() != 0 {
		t.Skip("the limited target is made as root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	limited := filepath.Join(t.TempDir(), "acpterm-limited")
	// A home of its own, with no secret files: which of the user's exist
	// (each needs a mount namespace to hide) is this machine's to say.
	script := "#!/bin/sh\nHOME=" + t.TempDir() + " exec unshare --user --map-root-user /bin/sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' " +
		e.bin + " \"$@\"\n"
	if err := os.WriteFile(limited, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	connect := func(p *sandbox.Policy) (*remote.Client, error) {
		return remote.Connect(ctx, "ssh://target"+dir, &remote.ConnectOptions{Sandbox: p, ToolArgs: []string{"-F", e.config}, Binary: limited})
	}
	var se *remote.SandboxError
	_, err := connect(&sandbox.Policy{Mode: sandbox.ReadOnly})
	if !errors.As(err, &se) || len(se.Hello.Sandbox.Missing) == 0 {
		t.Fatalf("read-only, nothing less accepted: %v, want a SandboxError naming what is missing", err)
	}
	c, err := connect(&sandbox.Policy{Mode: sandbox.ReadOnly, WithoutMountNamespace: true})
	if err != nil {
		t.Fatalf("read-only, WithoutMountNamespace: %v", err)
	}
	if a := c.Sandbox(); a == nil || len(a.Missing) == 0 {
		t.Errorf("Sandbox() = %+v, want what the target does without", a)
	}
	_ = c.Close()
	_, err = connect(&sandbox.Policy{Mode: sandbox.ReadOnly, Network: sandbox.DenyNetwork, BestEffort: true})
	if !errors.As(err, &se) || se.Hello.Sandbox.Error == "" {
		t.Errorf("network deny without namespaces, BestEffort: %v, want a SandboxError", err)
	}
}
