//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// userUID is the ordinary user the test runs acpterm as.
const userUID = 1000

// TestSandboxNoUserNamespaces runs acpterm as an ordinary user on a system
// where creating a user namespace is refused, as on stock Ubuntu 24.04 and
// later (AppArmor) or with user.max_user_namespaces at 0. The test makes
// that system honestly: a user namespace of its own, mapping the host's
// ids to themselves, in which it sets user.max_user_namespaces to 0 and
// then becomes uid 1000; every user namespace the sandbox asks for inside
// it fails as it would there.
//
// What must hold: writes outside the workspace are still refused
// (Landlock), and the run's first line names what is missing (the
// read-only .git, metadata outside); --network deny, which cannot be had
// without a namespace, is refused before anything runs.
func TestSandboxNoUserNamespaces(t *testing.T) {
	t.Parallel()
	base := userBase(t, "acpterm-nouserns-")
	dir := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws, outside, home, bin := dir("ws"), dir("outside"), dir("home"), dir("bin")
	dir("ws/.git")
	victim := filepath.Join(outside, "victim")
	for _, f := range []string{victim, filepath.Join(ws, ".git/config")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exe := giveToUser(t, base, bin)

	prompt := strings.Join([]string{
		"echo in > inside",
		"echo out > " + outside + "/f",
		"echo planted >> .git/config",
		"chmod 0666 " + victim,
	}, "\n")
	run := func(extra ...string) (string, string, int) {
		args := append([]string{"run", "--approve-all"}, extra...)
		args = append(args, "-p", prompt, "--", exe, "agent", "--keep-going")
		return inNoUserNamespaces(t, ws, home, exe, args...)
	}

	stdout, stderr, code := run()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !exists(filepath.Join(ws, "inside")) {
		t.Error("the command could not write in the workspace")
	}
	if exists(filepath.Join(outside, "f")) {
		t.Error("a command wrote outside the workspace on Landlock alone")
	}
	mustContain(t, "stdout", stdout, "Permission denied")
	// The line names what this configuration lacks, and the rest shows it.
	first, _, _ := strings.Cut(stderr, "\n")
	mustContain(t, "the first line of stderr", first, "acpterm: sandbox: ", "missing: no mount namespace", ".git", "chmod", "protect the files")
	if strings.Contains(stderr, "cannot be set up") {
		t.Errorf("a part of acpterm refused what the run accepted:\n%s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); !bytes.Contains(b, []byte("planted")) {
		t.Errorf(".git/config is %q: without a mount namespace it is writable, and the line says so", b)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("victim: %v %v: without a mount namespace chmod outside is not stopped, and the line says so", fi.Mode(), err)
	}

	_, stderr, code = run("--network", "deny")
	if code == 0 || !strings.Contains(stderr, "cannot deny the network") {
		t.Errorf("--network deny without namespaces: exit %d, stderr:\n%s", code, stderr)
	}
}

// userBase makes the directory of a test that runs acpterm as uid userUID
// (inNoUserNamespaces), or skips the test where that cannot be had: a
// fresh directory that anyone may enter (the test's own temporary
// directories are root's, mode 0700), removed at the end.
func userBase(t *testing.T, prefix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to map a range of ids into the test's user namespace")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// giveToUser copies acpterm into bin, an existing directory below base,
// hands all of base to uid userUID, and returns the copy's path.
func giveToUser(t *testing.T, base, bin string) string {
	t.Helper()
	exe := filepath.Join(bin, "acpterm")
	copyFile(t, plainAcpterm(t), exe, 0o755)
	if err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, userUID, userUID)
	}); err != nil {
		t.Fatal(err)
	}
	return exe
}

// inNoUserNamespaces runs exe with args as uid 1000 in a user namespace
// where no further user namespace can be created, and returns its stdout,
// stderr and exit status.
func inNoUserNamespaces(t *testing.T, dir, home, exe string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := `echo 0 > /proc/sys/user/max_user_namespaces || exit 125
exec setpriv --reuid=` + strconv.Itoa(userUID) + ` --regid=` + strconv.Itoa(userUID) + ` --clear-groups -- "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh", exe}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "GORACE=atexit_sleep_ms=0"}
	const size = 65536
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: size}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: size}},
		GidMappingsEnableSetgroups: true,
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("acpterm did not end within the bound\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%v", err)
		}
		code = ee.ExitCode()
	}
	if code == 125 && strings.Contains(stderr.String(), "max_user_namespaces") {
		t.Skipf("this kernel does not let the test limit user namespaces: %s", &stderr)
	}
	return stdout.String(), stderr.String(), code
}

// copyFile copies an executable with cp, not from this process: a
// process that a parallel test forks while the copy is open for writing
// holds the descriptor until its exec, and running the copy then fails
// with ETXTBSY (TestRemotePodmanDynamicBuild did, under -race).
func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	if out, err := exec.Command("cp", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", from, to, err, out)
	}
	if err := os.Chmod(to, mode); err != nil {
		t.Fatal(err)
	}
}
