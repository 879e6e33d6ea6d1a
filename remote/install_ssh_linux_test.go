package remote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
)

// TestSSHInstall: the copy step over a real sshd, for the static build
// and for the default one (dynamically linked: an ordinary host has its
// loader); the exec server then runs from the copy, and a second Install
// finds it. The copies go to a temp dir, not the user's cache.
func TestSSHInstall(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	tg, err := remote.ParseTarget("ssh://target")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, bin string }{
		{"static", acptermBuild(t, "static")},
		{"default", e.bin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copts := remote.CommandOptions{ToolArgs: []string{"-F", e.config}}
			in, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: tc.bin, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(in)
			if !in.Copied || !strings.HasPrefix(in.Path, dir+"/") {
				t.Errorf("install: %+v, want a copy in %s", in, dir)
			}
			start := time.Now()
			again, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: tc.bin, Dir: dir})
			if err != nil || again.Copied || again.Path != in.Path {
				t.Errorf("second install: %+v, %v", again, err)
			}
			t.Logf("second install found it in %v", time.Since(start).Round(time.Millisecond))

			copts.Binary = in.Path
			ws := t.TempDir()
			cmd, err := remote.Command(remote.Target{Kind: remote.SSH, Host: "target", Dir: ws}, &copts)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := remote.Dial(cmd)
			if err != nil {
				t.Fatal(err)
			}
			c, err := remote.NewClient(testCtx(t), conn, nil)
			if err != nil {
				_ = conn.Close()
				t.Fatalf("NewClient over ssh: %v; ssh said: %s", err, conn.Stderr())
			}
			defer c.Close()
			id := create(t, c, &acp.CreateTerminalRequest{Command: "/bin/sh", Args: []string{"-c", "echo from the copy; exit 3"}})
			if st := waitExit(t, c, id); st.String() != "exit 3" {
				t.Errorf("status %v", st)
			}
			if out := output(t, c, id); out.Output != "from the copy\n" {
				t.Errorf("output %q", out.Output)
			}
		})
	}
}
