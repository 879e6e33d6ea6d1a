package sandbox

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// workspace makes a workspace root with a git directory in it and a
// directory outside it; both are under the host's temporary directory,
// so only the sandbox stands between the command and outside.
func workspace(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	for _, d := range []string{".git/hooks", "src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// need skips the test where the kernel lacks what it exercises.
func need(t testing.TB, namespaces bool) {
	t.Helper()
	if abi := kernelABI(); abi < minFSABI {
		t.Skipf("Landlock ABI %d < %d", abi, minFSABI)
	}
	if namespaces {
		if err := probeNamespaces(); err != nil {
			t.Skipf("no namespaces: %v", err)
		}
	}
}

// wrap wraps cmd under p, failing the test on error.
func wrap(t *testing.T, p *Policy, cmd *exec.Cmd) *Applied {
	t.Helper()
	a, err := p.Wrap(cmd)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// act runs the test binary's action under p in dir and returns its result
// line.
func (b box) act(t *testing.T, p *Policy, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), actEnv+"=1")
	cmd.Dir = dir
	out, code := b.run(t, p, cmd)
	if code != 0 {
		t.Fatalf("%v: status %d\n%s", args, code, out)
	}
	return strings.TrimSpace(out)
}

// sh runs a shell script under p; it returns the output and exit status.
func (b box) sh(t *testing.T, p *Policy, dir, script string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), actEnv+"=1") // for scripts that run the test binary
	return b.run(t, p, cmd)
}

func (b box) wantAct(t *testing.T, p *Policy, dir, want string, args ...string) {
	t.Helper()
	if got := b.act(t, p, dir, args...); got != want {
		t.Errorf("%v: got %q, want %q", args, got, want)
	}
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (or %v): the sandboxed command wrote it", path, err)
	}
}

func TestWorkspaceWrite(t *testing.T) {
	t.Parallel()
	both(t, testWorkspaceWrite)
}

func testWorkspaceWrite(t *testing.T, b box) {
	need(t, true)
	root, outside := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}

	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "src/a.go"))
	b.wantAct(t, p, root, "ok", "rename", filepath.Join(root, "src/a.go"), filepath.Join(root, "b.go"))
	// Outside the writable paths the mount is read-only, which the
	// kernel checks before Landlock (TestLandlockAlone: without it).
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(outside, "direct"))
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, "out/via-symlink"))
	mustNotExist(t, filepath.Join(outside, "direct"))
	mustNotExist(t, filepath.Join(outside, "via-symlink"))

	// Renaming a file out of the workspace is a write outside it, and
	// the workspace is a mount of its own.
	b.wantAct(t, p, root, "EXDEV", "rename", filepath.Join(root, "b.go"), filepath.Join(outside, "moved"))
	out, code := b.sh(t, p, root, `mv "$1" "$2"`, filepath.Join(root, "b.go"), outside)
	if code == 0 {
		t.Errorf("mv out of the workspace succeeded:\n%s", out)
	}
	mustNotExist(t, filepath.Join(outside, "b.go"))

	// Descendants that left the process group and session, and a shell
	// that left the workspace, are confined all the same. CombinedOutput
	// returns once every holder of the output pipe has exited.
	for name, script := range map[string]string{
		"setsid":      `setsid sh -c 'echo x > "$1"' sh "$1"`,
		"double fork": `( (sh -c 'echo x > "$1"' sh "$1" &) & )`,
		"cd /":        `cd / && echo x > "${1#/}"`,
	} {
		target := filepath.Join(outside, strings.ReplaceAll(name, " ", "-"))
		out, _ := b.sh(t, p, root, script, target)
		if !strings.Contains(out, "Read-only file system") {
			t.Errorf("%s: output %q, want Read-only file system", name, out)
		}
		mustNotExist(t, target)
	}

	// The private TMPDIR and the null devices are writable.
	out, code = b.sh(t, p, root, `echo x > "$TMPDIR/f" && echo x > /dev/null && cat "$TMPDIR/f"`)
	if code != 0 || out != "x\n" {
		t.Errorf("TMPDIR and /dev/null: status %d, output %q", code, out)
	}
}

func TestGitReadOnly(t *testing.T) {
	t.Parallel()
	both(t, testGitReadOnly)
}

func testGitReadOnly(t *testing.T, b box) {
	need(t, true)
	root, _ := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}}
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, ".git/hooks/pre-commit"))
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, ".git/config"))
	// Started inside .git, a relative write still meets the mount.
	b.wantAct(t, p, filepath.Join(root, ".git/hooks"), "EROFS", "write", "post-checkout")
	// .git can be neither moved away nor replaced.
	b.wantAct(t, p, root, "EBUSY", "rename", filepath.Join(root, ".git"), filepath.Join(root, "git-old"))
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "src/ok"))
	mustNotExist(t, filepath.Join(root, ".git/hooks/pre-commit"))
	mustNotExist(t, filepath.Join(root, ".git/hooks/post-checkout"))

	p.WritableGit = true
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, ".git/hooks/pre-commit"))
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	both(t, testReadOnly)
}

func testReadOnly(t *testing.T, b box) {
	need(t, false)
	root, outside := workspace(t)
	p := &Policy{Mode: ReadOnly, Writable: []string{root}} // Writable is ignored
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, "src/a.go"))
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(outside, "f"))
	out, code := b.sh(t, p, root, `echo x > "$TMPDIR/f" && echo y > /dev/null && cat "$TMPDIR/f" "$1"`, filepath.Join(root, ".git/config"))
	if code != 0 || out != "x\n[core]\n" {
		t.Errorf("TMPDIR, /dev/null and reading: status %d, output %q", code, out)
	}
}

func TestNetwork(t *testing.T) {
	t.Parallel()
	both(t, testNetwork)
}

func testNetwork(t *testing.T, b box) {
	need(t, true)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	dir := t.TempDir()
	for _, mode := range []Mode{Off, ReadOnly} {
		t.Run(mode.String(), func(t *testing.T) {
			deny := &Policy{Mode: mode, Network: DenyNetwork}
			if got := b.act(t, deny, dir, "dial", addr); got == "ok" {
				t.Errorf("deny: dial %s succeeded", addr)
			}
			b.wantAct(t, deny, dir, "ok", "loopback")
			b.wantAct(t, &Policy{Mode: mode, Network: AllowNetwork}, dir, "ok", "dial", addr)
		})
	}
}

// TestCannotLift: what the command can do to itself does not widen the
// sandbox.
func TestCannotLift(t *testing.T) {
	t.Parallel()
	both(t, testCannotLift)
}

func testCannotLift(t *testing.T, b box) {
	need(t, true)
	root, outside := workspace(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}

	// Nested namespaces. A nested user namespace gives the command every
	// capability in it, and so new mount and network namespaces, but no
	// id mapping, since /proc/self/uid_map is not writable under Landlock.
	// Its unmapped user may write outside as far as the file modes go, so
	// that only Landlock refuses.
	for d, mode := range map[string]os.FileMode{filepath.Dir(outside): 0o711, outside: 0o777} {
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	for name, script := range map[string]string{
		"unshare -Umn": `unshare -Umn --propagation unchanged sh -c 'echo x > "$1"' sh "$1"`,
		"unshare -U":   `unshare -U sh -c 'echo x > "$1"' sh "$1"`,
	} {
		target := filepath.Join(outside, strings.ReplaceAll(name, " ", ""))
		out, _ := b.sh(t, p, root, script, target)
		if strings.Contains(out, "unshare:") || !strings.Contains(out, "Read-only file system") {
			t.Errorf("%s: output %q, want Read-only file system from sh", name, out)
		}
		mustNotExist(t, target)
	}
	out, code := b.sh(t, p, root, `unshare -Un "$1" dial "$2"`, os.Args[0], l.Addr().String())
	if code != 0 || strings.TrimSpace(out) == "ok" || strings.Contains(out, "unshare:") {
		t.Errorf("unshare -n, then dial the host: status %d, output %q", code, out)
	}
	// Unmounting the read-only .git.
	out, code = b.sh(t, p, root, `umount .git || unshare -rm umount .git`)
	if code == 0 {
		t.Errorf("umount .git succeeded: %s", out)
	}
	// A second Landlock ruleset only narrows.
	b.wantAct(t, p, root, "EROFS", "relandlock", filepath.Join(outside, "relandlock"))
	// Signals do not leave the sandbox (Landlock ABI 6 scoping).
	if kernelABI() >= 6 {
		b.wantAct(t, p, root, "EPERM", "kill", strconv.Itoa(os.Getpid()))
	}
}

func TestEnvAndProcess(t *testing.T) {
	t.Parallel()
	need(t, true)
	dir := t.TempDir()
	p := &Policy{Mode: ReadOnly, Network: DenyNetwork}
	cmd := exec.Command(os.Args[0], "env")
	// A plan smuggled in the request's environment must go nowhere.
	cmd.Env = append(os.Environ(), actEnv+"=1", planEnv+`={"path":"/bin/true"}`)
	a := wrap(t, p, cmd)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), planEnv) {
		t.Errorf("the command's environment holds %s:\n%s", planEnv, out)
	}
	if !strings.Contains(string(out), "\nTMPDIR="+a.TempDir+"\n") {
		t.Errorf("TMPDIR=%s missing from the command's environment:\n%s", a.TempDir, out)
	}

	// The helper execs in place: the command has the pid Start reported,
	// and the process group it asked for.
	cmd = exec.Command(os.Args[0], "pid")
	cmd.Env = append(os.Environ(), actEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	wrap(t, p, cmd)
	out, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(cmd.Process.Pid)
	if got := strings.TrimSpace(string(out)); got != want+" "+want {
		t.Errorf("pid and pgid %q, want %q", got, want+" "+want)
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	need(t, false)
	dir := t.TempDir()
	p := &Policy{Mode: ReadOnly}
	cmd := exec.Command("/bin/sh")
	cmd.Path = filepath.Join(dir, "missing")
	wrap(t, p, cmd)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != ExitNotFound || !strings.HasPrefix(string(out), "sandbox: ") {
		t.Errorf("missing command: status %d, output %q; want %d and a sandbox: message", code, out, ExitNotFound)
	}
	if err := os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("/bin/sh")
	cmd.Path = filepath.Join(dir, "noexec")
	wrap(t, p, cmd)
	out, _ = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != ExitCannotExec {
		t.Errorf("non-executable command: status %d, output %q; want %d", code, out, ExitCannotExec)
	}
}

// TestNoLandlock simulates a kernel without Landlock: a strict policy is
// refused with a clear error; a best-effort one runs, unconfined, and says
// so.
// Not parallel: it replaces a package variable the other tests read.
func TestNoLandlock(t *testing.T) {
	saved := kernelABI
	kernelABI = func() int { return 0 }
	defer func() { kernelABI = saved }()
	root, outside := workspace(t)

	p := &Policy{Mode: ReadOnly}
	_, err := p.Wrap(exec.Command("/bin/true"))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Landlock is not available (kernel ABI 0): cannot enforce read-only") {
		t.Errorf("Wrap: %v, want ErrUnsupported naming Landlock", err)
	}

	p = &Policy{Mode: WorkspaceWrite, Writable: []string{root}, BestEffort: true}
	cmd := exec.Command(os.Args[0], "write", filepath.Join(outside, "f"))
	cmd.Env = append(os.Environ(), actEnv+"=1")
	a := wrap(t, p, cmd)
	if a.Confined() || len(a.Missing) == 0 {
		t.Errorf("best effort without Landlock: %v; want unconfined with Missing", a)
	}
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("best effort without Landlock: %q, %v", out, err)
	}
}

// TestNoInit is not parallel: it turns Init off for the whole package,
// which would fail the namespace probe of a test running beside it.
func TestNoInit(t *testing.T) {
	initCalled.Store(false)
	defer initCalled.Store(true)
	for _, p := range []*Policy{{Mode: ReadOnly}, {Network: DenyNetwork}} {
		if _, err := p.Wrap(exec.Command("/bin/true")); !errors.Is(err, ErrNoInit) {
			t.Errorf("%v/%v: Wrap: %v, want ErrNoInit", p.Mode, p.Network, err)
		}
	}
	// Nothing to enforce, nothing to refuse.
	if _, err := (&Policy{}).Wrap(exec.Command("/bin/true")); err != nil {
		t.Errorf("off: %v", err)
	}
	if r := Support(); r.Init || r.Namespaces {
		t.Errorf("Support without Init: %+v", r)
	}
}

func TestWrapErrors(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]*Policy{
		"no writable":       {Mode: WorkspaceWrite},
		"relative writable": {Mode: WorkspaceWrite, Writable: []string{"src"}},
		"missing writable":  {Mode: WorkspaceWrite, Writable: []string{"/nonexistent/dir"}},
		"bad mode":          {Mode: 7},
	} {
		if _, err := p.Wrap(exec.Command("/bin/true")); err == nil {
			t.Errorf("%s: Wrap succeeded", name)
		}
	}
}

func TestSupport(t *testing.T) {
	t.Parallel()
	r := Support()
	if r.LandlockABI != kernelABI() || !r.Init || len(r.Modes) != 4 {
		t.Errorf("Support: %+v", r)
	}
	s := r.String()
	if !strings.Contains(s, "landlock: ") || !strings.Contains(s, "workspace-write, network deny: ") {
		t.Errorf("Support().String():\n%s", s)
	}
	t.Logf("\n%s", s)
}
