package sandbox

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// userCaches makes caches as a user has them, each with an entry in it,
// and returns the environment that names them.
func userCaches(t *testing.T, base string) (env []string, entries []string) {
	t.Helper()
	for _, c := range []struct{ env, dir string }{
		{"GOCACHE", "go-build"}, {"GOMODCACHE", "go/pkg/mod"}, {"npm_config_cache", ".npm"}, {"XDG_CACHE_HOME", ".cache"},
	} {
		d := filepath.Join(base, c.dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		entry := filepath.Join(d, "entry")
		if err := os.WriteFile(entry, []byte("the user's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, c.env+"="+d)
		entries = append(entries, entry)
	}
	return env, entries
}

func TestCacheDir(t *testing.T) {
	t.Parallel()
	both(t, testCacheDir)
}

// testCacheDir: with a CacheDir, a command cannot write the user's caches
// (named by the caller's environment) but has its own, named by the same
// variables, which the next command finds as the first left them.
func testCacheDir(t *testing.T, b box) {
	need(t, true)
	root, outside := workspace(t)
	env, entries := userCaches(t, outside)
	cacheDir := filepath.Join(t.TempDir(), "state", "sandbox-cache")
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}, CacheDir: cacheDir}

	// Writing in each of the user's caches fails; in each of its own
	// works. $1.. are the user's cache entries.
	script := `for f in "$@"; do { echo poisoned > "$f"; } 2>/dev/null && echo "wrote $f"; done
for v in "$GOCACHE" "$GOMODCACHE" "$npm_config_cache" "$PIP_CACHE_DIR" "$CARGO_HOME" "$UV_CACHE_DIR" "$XDG_CACHE_HOME"; do echo mine > "$v/entry" || echo "cannot write $v"; done
echo "GOCACHE=$GOCACHE XDG_CACHE_HOME=$XDG_CACHE_HOME GOPROXY=$GOPROXY"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, entries...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, code := b.run(t, p, cmd)
	if code != 0 || strings.Contains(out, "wrote") || strings.Contains(out, "cannot") {
		t.Fatalf("status %d, output:\n%s", code, out)
	}
	for _, e := range entries {
		if got, _ := os.ReadFile(e); string(got) != "the user's\n" {
			t.Errorf("%s holds %q", e, got)
		}
	}
	wantVars := "GOCACHE=" + filepath.Join(cacheDir, "go-build") + " XDG_CACHE_HOME=" + filepath.Join(cacheDir, "xdg") +
		" GOPROXY=file://" + filepath.Join(outside, "go/pkg/mod") + "/cache/download,"
	if !strings.Contains(out, wantVars) {
		t.Errorf("output %q, want %q in it", out, wantVars)
	}
	for _, c := range ownCaches {
		d := filepath.Join(cacheDir, c.dir)
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v: want a directory, mode 0700", d, fi, err)
		}
	}

	// The next command (another sandbox) finds what the first wrote.
	cmd = exec.Command("/bin/cat", filepath.Join(cacheDir, "go-build", "entry"))
	cmd.Env = append(os.Environ(), env...)
	if out, code := b.run(t, p, cmd); code != 0 || out != "mine\n" {
		t.Errorf("the next command read %q (status %d), want %q", out, code, "mine\n")
	}
}

func TestCacheDirLink(t *testing.T) {
	t.Parallel()
	both(t, testCacheDirLink)
}

// testCacheDirLink: a symlink planted in place of one of the own caches
// (CacheDir/go-build pointing at the user's build cache) is left out and
// named in LeftOut; the command's GOCACHE is then a directory in its
// TMPDIR, and the link's target stays unwritable.
func testCacheDirLink(t *testing.T, b box) {
	need(t, true)
	root, outside := workspace(t)
	env, entries := userCaches(t, outside)
	cacheDir := filepath.Join(t.TempDir(), "sandbox-cache")
	if err := os.Mkdir(cacheDir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cacheDir, "go-build")
	symlink(t, filepath.Join(outside, "go-build"), link)
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}, CacheDir: cacheDir}

	var a *Applied
	if b.spawner {
		a = newSpawner(t, p).Applied()
	} else {
		a = wrap(t, p, exec.Command("/bin/true"))
	}
	if len(a.LeftOut) != 1 || !strings.Contains(a.LeftOut[0], link) {
		t.Errorf("LeftOut = %q, want %s named", a.LeftOut, link)
	}
	if slices.Contains(a.Writable, filepath.Join(outside, "go-build")) {
		t.Errorf("Writable = %q holds the link's target", a.Writable)
	}

	cmd := exec.Command("/bin/sh", "-c", `{ echo poisoned > "$1"; } 2>/dev/null && echo "wrote $1"
mkdir -p "$GOCACHE" && echo mine > "$GOCACHE/x" || echo "cannot write $GOCACHE"
case $GOCACHE in "$TMPDIR"/*) ;; *) echo "GOCACHE=$GOCACHE is not in TMPDIR=$TMPDIR";; esac`, "sh", filepath.Join(link, "entry"))
	cmd.Env = append(os.Environ(), env...)
	if out, code := b.run(t, p, cmd); code != 0 || out != "" {
		t.Errorf("status %d, output:\n%s", code, out)
	}
	if got, _ := os.ReadFile(entries[0]); string(got) != "the user's\n" {
		t.Errorf("%s holds %q", entries[0], got)
	}
}

// TestCacheDirGoBuild: a confined `go build`, without the network, of a
// module whose dependency is only in the user's module cache works; the
// user's caches are not written; and a dependency doctored in the user's
// cache is refused by go's checksum check, not built.
func TestCacheDirGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	need(t, true)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	root, outside := workspace(t)
	proxy := filepath.Join(outside, "proxy")
	userMod := filepath.Join(outside, "modcache")
	userBuild := filepath.Join(outside, "gocache")
	writeModule(t, proxy, "example.com/dep", "v1.0.0", `package dep

func Hello() string { return "hello from dep" }
`)
	files := map[string]string{
		"go.mod":  "module example.com/ws\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Hello()) }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The environment of the tests' go with everything that would reach
	// outside the test taken out.
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "GO") || k == "CGO_ENABLED"
	})
	base = append(base, "GOENV=off", "GOTOOLCHAIN=local", "GOFLAGS=-modcacherw", "GOWORK=off", "CGO_ENABLED=0", "GOMODCACHE="+userMod)

	// As the user, unconfined: go.sum, and the module in the user's cache.
	tidy := exec.Command(goBin, "mod", "tidy")
	tidy.Dir = root
	tidy.Env = append(slices.Clone(base), "GOPROXY=file://"+proxy, "GOSUMDB=off", "GOCACHE="+userBuild)
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	if err := os.RemoveAll(proxy); err != nil {
		t.Fatal(err)
	}
	before := tree(t, outside)

	build := func(cacheDir string) (string, int) {
		cmd := exec.Command(goBin, "build", "-buildvcs=false", "-o", filepath.Join(root, "ws"), ".")
		cmd.Dir = root
		// The user's GOPROXY is Go's default: with the network denied,
		// only the file:// proxy in front of it can answer.
		cmd.Env = append(slices.Clone(base), "GOCACHE="+userBuild)
		p := &Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}, CacheDir: cacheDir}
		return box{}.run(t, p, cmd)
	}
	cacheDir := filepath.Join(t.TempDir(), "sandbox-cache")
	if out, code := build(cacheDir); code != 0 {
		t.Fatalf("confined go build: status %d\n%s", code, out)
	}
	if out, err := exec.Command(filepath.Join(root, "ws")).Output(); err != nil || string(out) != "hello from dep\n" {
		t.Errorf("the binary printed %q (%v)", out, err)
	}
	if after := tree(t, outside); !slices.Equal(before, after) {
		t.Errorf("the user's caches changed:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "go-mod", "example.com", "dep@v1.0.0", "dep.go")); err != nil {
		t.Errorf("the dependency is not in the sandbox's module cache: %v", err)
	}

	// Doctored in the user's cache: go refuses it.
	zipPath := filepath.Join(userMod, "cache", "download", "example.com", "dep", "@v", "v1.0.0.zip")
	if err := os.Chmod(filepath.Dir(zipPath), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(zipPath)
	writeZip(t, zipPath, "example.com/dep@v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n",
		"dep.go": "package dep\n\nfunc Hello() string { return \"doctored\" }\n",
	})
	out, code := build(filepath.Join(t.TempDir(), "sandbox-cache"))
	if code == 0 || !strings.Contains(out, "checksum mismatch") {
		t.Errorf("a doctored module: status %d, output:\n%s\nwant a checksum mismatch", code, out)
	}
}

// writeModule lays out module path at version in the file-proxy layout
// of dir.
func writeModule(t *testing.T, dir, path, version, src string) {
	t.Helper()
	d := filepath.Join(dir, path, "@v")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module " + path + "\n"
	for name, text := range map[string]string{
		"list":            version + "\n",
		version + ".info": `{"Version":"` + version + `","Time":"2026-01-01T00:00:00Z"}`,
		version + ".mod":  gomod,
	} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeZip(t, filepath.Join(d, version+".zip"), path+"@"+version, map[string]string{"go.mod": gomod, "dep.go": src})
}

func writeZip(t *testing.T, name, prefix string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for f, text := range files {
		w, err := zw.Create(prefix + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(text))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree lists every file below dir with its size and modification time.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d %v", path, fi.Mode(), fi.Size(), fi.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGoEnvFileFIFO: GOENV may come from the agent's request; naming a
// FIFO (or a device) must not block the host, which reads it before the
// command starts. Without O_NONBLOCK the open would wait for a writer
// forever.
func TestGoEnvFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fifo, "/dev/zero"} {
		if got := goProxyFor([]string{"GOENV=" + name, "GOMODCACHE=/m"}); got != "file:///m/cache/download,"+defaultGoProxy {
			t.Errorf("GOENV=%s: GOPROXY = %q", name, got)
		}
	}
}
