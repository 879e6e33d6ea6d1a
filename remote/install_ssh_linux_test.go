package remote_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/sshtest"
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

			copts = *in.Options(copts)
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

// TestSSHCopyCannotBeReplaced: the copy of acpterm on a target is what
// runs there unconfined, at each later connection. Session 1, through a
// real sshd, runs a confined command that renames a script of the same
// size over the copy: it fails, since the copy is not where commands
// may write (the old place, ~/.cache, was). Replaced all the same (by
// anything that is not confined), the script is not run by session 2:
// Install finds the copy's SHA-256 wrong and copies acpterm again,
// saying so; and a copy replaced between Install and the start of the
// exec server is refused there, before it runs, in words that say why.
func TestSSHCopyCannotBeReplaced(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	bin := acptermBuild(t, "static")
	data, cache, ws := t.TempDir(), t.TempDir(), t.TempDir()
	tg := remote.Target{Kind: remote.SSH, Host: "target", Dir: ws}
	// The target user's data and cache directories are the test's own.
	copts := remote.CommandOptions{ToolArgs: []string{"-F", e.config, "-o",
		"SetEnv=GORACE=atexit_sleep_ms=0 SHLVL=1 XDG_DATA_HOME=" + data + " XDG_CACHE_HOME=" + cache}}
	marker := filepath.Join(t.TempDir(), "planted-ran")
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\ntouch %s\nexec %s \"$@\"\n#", marker, bin)
	plant := []byte(script + strings.Repeat("#", int(info.Size())-len(script)-1) + "\n")
	if err := os.WriteFile(filepath.Join(ws, "plant"), plant, 0o755); err != nil {
		t.Fatal(err)
	}

	// Session 1.
	in, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(in)
	if strings.HasPrefix(in.Path, cache+"/") || strings.HasPrefix(in.Path, ws+"/") {
		t.Errorf("the copy %s is in the target's cache or workspace", in.Path)
	}
	c := dialCopy(t, tg, in.Options(copts))
	id := create(t, c, &acp.CreateTerminalRequest{SessionID: "s", Command: `cp plant "$C.new" && mv -f "$C.new" "$C"`,
		Env: []acp.EnvVariable{{Name: "C", Value: in.Path}}})
	st := waitExit(t, c, id)
	t.Logf("the confined command: %v: %q", st, output(t, c, id).Output)
	_ = c.Close()
	if sum, _ := fileSHA256(in.Path); sum != in.SHA256 {
		t.Errorf("a confined command replaced the copy at %s (exit %v)", in.Path, st)
	} else {
		// Replaced from outside any sandbox.
		replace(t, in.Path, plant)
	}

	// Session 2: Install sees the copy is not acpterm, and copies it again.
	again, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(again)
	if !again.Copied || !strings.Contains(again.Replaced, "not the copy acpterm made") || !strings.Contains(again.String(), "replaced "+in.Path) {
		t.Errorf("second install: %+v, want the copy replaced and a message that says why", again)
	}
	c = dialCopy(t, tg, again.Options(copts))
	id = create(t, c, &acp.CreateTerminalRequest{SessionID: "s", Command: "echo from the copy"})
	if st := waitExit(t, c, id); st.String() != "exit 0" {
		t.Errorf("status %v", st)
	}
	_ = c.Close()

	// Replaced between Install and the start: refused before it runs.
	third, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: bin})
	if err != nil || third.Copied {
		t.Fatalf("third install: %+v, %v", third, err)
	}
	replace(t, third.Path, plant)
	cmd, err := remote.Command(tg, third.Options(copts))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if cl, err := remote.NewClient(testCtx(t), conn, nil); err == nil {
		_ = cl.Close()
		t.Error("the exec server started from a replaced copy")
	}
	if msg := conn.Stderr(); !strings.Contains(msg, third.Path+" is not the copy acpterm made") {
		t.Errorf("the transport said %q, want why the copy was not run", msg)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the planted script ran")
	}
	// Nothing of the test's is left on the target: every process there
	// had the test's XDG_DATA_HOME.
	if left := sshtest.WaitNoneRunning("XDG_DATA_HOME", data, 2*time.Second); len(left) > 0 {
		t.Errorf("left running on the target: %v", left)
	}
}

// dialCopy starts the exec server from a copy on tg through ssh.
func dialCopy(t *testing.T, tg remote.Target, copts *remote.CommandOptions) *remote.Client {
	t.Helper()
	cmd, err := remote.Command(tg, copts)
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
	return c
}

// replace renames data over path, as a command would that had the right.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
