//go:build unix

package remote_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/remote"
)

// fakeEngine writes a stand-in for podman that runs `podman exec -i
// CONTAINER CMD...` here, as CMD with env set first, its stdin through
// pipe (a shell pipeline stage such as "head -c 100", or "" for none).
// It lets Install's scripts run against this machine's sh, uname and
// files, with no container.
func fakeEngine(t *testing.T, env map[string]string, pipe string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n[ \"$1\" = exec ] && [ \"$2\" = -i ] || { echo \"fake podman: $*\" >&2; exit 125; }\nshift 3\n")
	for k, v := range env {
		b.WriteString("export " + k + "=" + remote.ShellQuote(v) + "\n")
	}
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_DATA_HOME"} {
		if _, set := env[v]; !set {
			b.WriteString("unset " + v + "\n")
		}
	}
	if pipe != "" {
		b.WriteString(pipe + " | \"$@\"\n")
	} else {
		b.WriteString("exec \"$@\"\n")
	}
	tool := filepath.Join(dir, "podman")
	if err := os.WriteFile(tool, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return tool
}

var fakeTarget = remote.Target{Kind: remote.Podman, Container: "fake"}

// TestInstallCopiesOnceThenFinds: the first Install uploads the binary
// into the cache dir, checked and executable; the second finds it.
func TestInstallCopiesOnceThenFinds(t *testing.T) {
	bin := acptermBuild(t, "static")
	cache := t.TempDir()
	tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": cache}, "")
	copts := &remote.CommandOptions{Tool: tool}
	in, err := remote.Install(testCtx(t), fakeTarget, copts, &remote.InstallOptions{Local: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(in)
	realCache, _ := filepath.EvalSymlinks(cache)
	if !in.Copied || in.OS != runtime.GOOS || in.Arch != runtime.GOARCH || in.Local != bin {
		t.Errorf("first install: %+v", in)
	}
	if want := filepath.Join(realCache, "acpterm", "exec-server", in.SHA256[:16], "acpterm"); in.Path != want {
		t.Errorf("path %s, want %s", in.Path, want)
	}
	got, err := os.ReadFile(in.Path)
	want, _ := os.ReadFile(bin)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the copy differs from the binary (%v)", err)
	}
	if fi, err := os.Stat(in.Path); err != nil || fi.Mode().Perm() != 0o500 {
		t.Errorf("the copy's mode: %v %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(in.Path), "*.tmp.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	again, err := remote.Install(testCtx(t), fakeTarget, copts, &remote.InstallOptions{Local: bin})
	if err != nil {
		t.Fatal(err)
	}
	if again.Copied || again.Path != in.Path {
		t.Errorf("second install: %+v, want the first copy found", again)
	}
	if s := again.String(); !strings.HasPrefix(s, "found "+in.Path) {
		t.Errorf("String: %q", s)
	}
}

// TestInstallWithoutHomeUsesOwnTempDir: a user with HOME=/ (a container's
// root) gets ${TMPDIR}/acpterm-UID, and only when that is its own.
func TestInstallWithoutHomeUsesOwnTempDir(t *testing.T) {
	bin := acptermBuild(t, "static")
	tmp := t.TempDir()
	tool := fakeEngine(t, map[string]string{"HOME": "/", "TMPDIR": tmp}, "")
	in, err := remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin})
	if err != nil {
		t.Fatal(err)
	}
	realTmp, _ := filepath.EvalSymlinks(tmp)
	dir := filepath.Join(realTmp, "acpterm-"+uid())
	if !strings.HasPrefix(in.Path, dir+"/") || !in.Copied {
		t.Errorf("install: %+v, want a copy in %s", in, dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want mode 0700", dir, fi.Mode(), err)
	}

	// Someone else's directory, or a symlink, in its place is refused.
	other := t.TempDir()
	tool = fakeEngine(t, map[string]string{"HOME": "/", "TMPDIR": other}, "")
	if err := os.Symlink(t.TempDir(), filepath.Join(other, "acpterm-"+uid())); err != nil {
		t.Fatal(err)
	}
	_, err = remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin})
	if err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("a symlinked dir: %v", err)
	}
	if os.Geteuid() != 0 {
		return
	}
	foreign := t.TempDir()
	tool = fakeEngine(t, map[string]string{"HOME": "/", "TMPDIR": foreign}, "")
	d := filepath.Join(foreign, "acpterm-"+uid())
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin})
	if err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
		t.Errorf("another user's dir: %v", err)
	}
}

func uid() string {
	out, err := exec.Command("id", "-u").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// TestInstallNeverLeavesAHalfCopy: an upload cut short or changed on the
// way fails, and leaves neither the binary nor a temporary file.
func TestInstallNeverLeavesAHalfCopy(t *testing.T) {
	bin := acptermBuild(t, "static")
	for _, tc := range []struct {
		name, pipe, want string
	}{
		{"cut short", "head -c 100000", "received 100000 of"},
		{"changed", "tr A B", "sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": cache}, tc.pipe)
			_, err := remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Install: %v, want an error saying %q", err, tc.want)
			}
			var files []string
			_ = filepath.Walk(cache, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					files = append(files, p)
				}
				return nil
			})
			if len(files) > 0 {
				t.Errorf("left on the target: %v", files)
			}
		})
	}
}

// TestInstallRefusesAnotherPlatform: a target whose uname names another
// OS or architecture gets no binary of this one, with an error that says
// what the target is and what to do.
func TestInstallRefusesAnotherPlatform(t *testing.T) {
	bin := acptermBuild(t, "static")
	other := "aarch64"
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		other, otherArch = "x86_64", "amd64"
	}
	for _, tc := range []struct {
		uname, platform string
	}{
		{"Linux " + other, "linux/" + otherArch},
		{"Linux armv7l", "linux/arm"},
		{"Darwin arm64", "darwin/arm64"},
		{"FreeBSD amd64", "freebsd/amd64"},
	} {
		if tc.platform == runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		t.Run(tc.platform, func(t *testing.T) {
			fake := t.TempDir()
			if err := os.WriteFile(filepath.Join(fake, "uname"), []byte("#!/bin/sh\necho "+tc.uname+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": t.TempDir(), "PATH": fake + ":" + os.Getenv("PATH")}, "")
			copts := &remote.CommandOptions{Tool: tool}
			_, err := remote.Install(testCtx(t), fakeTarget, copts, nil)
			if !errors.Is(err, remote.ErrPlatform) || !strings.Contains(err.Error(), "the target is "+tc.platform) {
				t.Errorf("running binary: %v", err)
			}
			_, err = remote.Install(testCtx(t), fakeTarget, copts, &remote.InstallOptions{Local: bin})
			if !errors.Is(err, remote.ErrPlatform) || !strings.Contains(err.Error(), "built for "+runtime.GOOS+"/"+runtime.GOARCH) {
				t.Errorf("named binary: %v", err)
			}
		})
	}
}

// TestInstallPicksTheSibling: acpterm-GOOS-GOARCH beside the running
// executable is the binary for that platform.
func TestInstallPicksTheSibling(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sibling := filepath.Join(filepath.Dir(exe), "acpterm-"+runtime.GOOS+"-"+runtime.GOARCH)
	data, err := os.ReadFile(acptermBuild(t, "static"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sibling, data, 0o755); err != nil {
		t.Skipf("cannot write beside the test binary: %v", err)
	}
	t.Cleanup(func() { os.Remove(sibling) })
	tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": t.TempDir()}, "")
	in, err := remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Local != sibling || !in.Copied {
		t.Errorf("install: %+v, want %s copied", in, sibling)
	}
}

// TestInstallSkipsWithBinary: a binary named on the target is used as it
// is; the transport is not even started.
func TestInstallSkipsWithBinary(t *testing.T) {
	copts := &remote.CommandOptions{Tool: filepath.Join(t.TempDir(), "no-such-tool"), Binary: "/opt/acpterm"}
	in, err := remote.Install(testCtx(t), fakeTarget, copts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != "/opt/acpterm" || in.Copied || in.OS != "" {
		t.Errorf("install: %+v", in)
	}
}

// TestInstallTransportError: a transport that fails says so with its
// own words.
func TestInstallTransportError(t *testing.T) {
	tool := filepath.Join(t.TempDir(), "podman")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho 'Error: no container with name or ID \"fake\" found' >&2\nexit 125\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, nil)
	if err == nil || !strings.Contains(err.Error(), `no container with name or ID "fake" found`) {
		t.Errorf("Install: %v", err)
	}
}

// TestInstallPrunesStaleCopies: a copy makes Install remove the copies of
// other builds not copied for 30 days, and nothing else: recent copies,
// and what a symlink in the cache directory points to, stay.
func TestInstallPrunesStaleCopies(t *testing.T) {
	bin := acptermBuild(t, "static")
	cache := t.TempDir()
	dir := filepath.Join(cache, "acpterm", "exec-server")
	old := time.Now().Add(-40 * 24 * time.Hour)
	outside := t.TempDir()
	for _, c := range []struct {
		name  string
		mtime time.Time
	}{{"0123456789abcdef", old}, {"fedcba9876543210", time.Now()}} {
		p := filepath.Join(dir, c.name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "acpterm"), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, c.mtime, c.mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": cache}, "")
	in, err := remote.Install(testCtx(t), fakeTarget, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin})
	if err != nil || !in.Copied {
		t.Fatalf("install: %+v, %v", in, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "0123456789abcdef")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale copy is still there (%v)", err)
	}
	for _, keep := range []string{filepath.Join(dir, "fedcba9876543210", "acpterm"), in.Path, outside, filepath.Join(dir, "linked")} {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
}

// TestInstallKeepsOutOfWritable: the copies are never kept where the
// exec server's commands may write: a data directory inside the target's
// directory or a --writable gives way to the user's own temp dir, and a
// directory named there is refused.
func TestInstallKeepsOutOfWritable(t *testing.T) {
	bin := acptermBuild(t, "static")
	ws, tmp, other := t.TempDir(), t.TempDir(), t.TempDir()
	realTmp, _ := filepath.EvalSymlinks(tmp)
	for _, tc := range []struct {
		name     string
		data     string
		writable []string
	}{
		{"in the target's directory", filepath.Join(ws, "data"), nil},
		{"in a --writable", filepath.Join(other, "data"), []string{other}},
		// The commands' own caches (sandbox.DefaultCacheDir).
		{"in the commands' caches", filepath.Join(other, "state", "acpterm", "sandbox-cache", "xdg", "data"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": tc.data, "XDG_STATE_HOME": filepath.Join(other, "state"), "TMPDIR": tmp}, "")
			tg := remote.Target{Kind: remote.Podman, Container: "fake", Dir: ws}
			in, err := remote.Install(testCtx(t), tg, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin, Writable: tc.writable})
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(realTmp, "acpterm-"+uid()) + "/"; !strings.HasPrefix(in.Path, want) {
				t.Errorf("copy at %s, want it in %s", in.Path, want)
			}
		})
	}
	tool := fakeEngine(t, map[string]string{"XDG_DATA_HOME": t.TempDir()}, "")
	tg := remote.Target{Kind: remote.Podman, Container: "fake", Dir: ws}
	_, err := remote.Install(testCtx(t), tg, &remote.CommandOptions{Tool: tool}, &remote.InstallOptions{Local: bin, Dir: filepath.Join(ws, "bin")})
	if err == nil || !strings.Contains(err.Error(), "lies in "+ws+", where commands confined there may write") {
		t.Errorf("a directory in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused directory was made (%v)", err)
	}
}

// TestInstallWithoutHashTool: a target with no system tool to take a
// SHA-256 gets a fresh copy for each run, in a private directory that is
// gone once the exec server has run.
func TestInstallWithoutHashTool(t *testing.T) {
	bin := acptermBuild(t, "static")
	data := t.TempDir()
	// The engine hides the tools from Install's and Command's scripts.
	tool := filepath.Join(t.TempDir(), "podman")
	engine := "#!/bin/sh\n[ \"$1\" = exec ] && [ \"$2\" = -i ] || exit 125\nshift 3\nexport XDG_DATA_HOME=" + data + "\nunset XDG_CACHE_HOME\n" +
		"if [ \"$1\" = /bin/sh ] && [ \"$2\" = -c ]; then s=$(printf '%s' \"$3\" | sed 's#/[a-z/-]*/\\(sha256sum\\|shasum\\|busybox\\)#/nonexistent/\\1#g'); shift 3; exec /bin/sh -c \"$s\" \"$@\"; fi\nexec \"$@\"\n"
	if err := os.WriteFile(tool, []byte(engine), 0o755); err != nil {
		t.Fatal(err)
	}
	tg := remote.Target{Kind: remote.Podman, Container: "fake", Dir: t.TempDir()}
	copts := remote.CommandOptions{Tool: tool}
	var paths []string
	for range 2 {
		in, err := remote.Install(testCtx(t), tg, &copts, &remote.InstallOptions{Local: bin})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(in)
		if !in.Copied || !in.Transient || !strings.Contains(in.String(), "for this run only") {
			t.Errorf("install: %+v, want a copy for this run only", in)
		}
		if fi, err := os.Stat(filepath.Dir(in.Path)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a private directory", filepath.Dir(in.Path), fi.Mode(), err)
		}
		paths = append(paths, in.Path)
		cmd, err := remote.Command(tg, in.Options(copts))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the exec server: %v: %s", err, out)
		}
		if _, err := os.Stat(filepath.Dir(in.Path)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the run's copy is still there (%v)", err)
		}
	}
	if paths[0] == paths[1] {
		t.Errorf("both runs had the copy %s", paths[0])
	}
}
