package remote_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
)

// TestConnectSSHHidesByLandlock: a target without user namespaces, whose
// home holds an ssh key, runs the client's commands (it failed closed
// before), hides the key by Landlock and says so in its hello; a command
// there cannot read the key, and reads known_hosts beside it.
func TestConnectSSHHidesByLandlock(t *testing.T) {
	e := needSSH(t)
	if os.Geteuid() != 0 {
		t.Skip("the limited target is made as root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	home := t.TempDir()
	for name, content := range map[string]string{".ssh/id_x": "SECRET-key\n", ".ssh/known_hosts": "PUBLIC-known-hosts\n"} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	limited := filepath.Join(t.TempDir(), "acpterm-limited")
	script := "#!/bin/sh\nHOME=" + home + " exec unshare --user --map-root-user /bin/sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' " +
		e.bin + " \"$@\"\n"
	if err := os.WriteFile(limited, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	c, err := remote.Connect(ctx, "ssh://target"+dir, &remote.ConnectOptions{
		Sandbox: &sandbox.Policy{Mode: sandbox.ReadOnly, WithoutMountNamespace: true}, ToolArgs: []string{"-F", e.config}, Binary: limited})
	if err != nil {
		t.Fatalf("read-only, WithoutMountNamespace, a key in the home: %v", err)
	}
	defer c.Close()
	sb := c.Hello().Sandbox
	if !sb.HiddenByLandlock || !slices.Contains(sb.Hidden, filepath.Join(home, ".ssh")) {
		t.Errorf("hello's sandbox %+v, want ~/.ssh hidden by Landlock", sb)
	}
	if a := c.Sandbox(); a == nil || !a.HiddenByLandlock {
		t.Errorf("Sandbox() = %+v, want HiddenByLandlock", a)
	}
	resp, err := c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "/bin/sh",
		Args: []string{"-c", "cat ~/.ssh/id_x; cat ~/.ssh/known_hosts"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Fatal(err)
	}
	out, err := c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: resp.TerminalID})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Output, "SECRET-") || !strings.Contains(out.Output, "PUBLIC-known-hosts") || !strings.Contains(out.Output, "Permission denied") {
		t.Errorf("output %q: want the key refused and known_hosts read", out.Output)
	}
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Error(err)
	}
}
