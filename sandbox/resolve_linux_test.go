package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// linkTree makes, under a directory of its own, a home directory, a
// temporary directory (TMPDIR) and a directory no sandbox writes ("sys"),
// and points HOME and TMPDIR at them. It returns that directory.
func linkTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"home/.cache", "tmp", "sys", "real/sub", "ws/sub"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("TMPDIR", filepath.Join(base, "tmp"))
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
		t.Setenv(v, "")
	}
	return base
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestResolvePath: links in system directories are followed, links where
// a sandboxed command (or another user) could have made them are refused
// with the link named.
func TestResolvePath(t *testing.T) {
	base := linkTree(t)
	p := func(rel string) string { return base + "/" + rel } // not cleaned: ".." is the resolver's
	symlink(t, p("real"), p("sys/abs"))
	symlink(t, "../real/sub", p("sys/rel"))
	symlink(t, p("home"), p("home/.cache/go-build"))
	symlink(t, p("real"), p("tmp/link"))
	symlink(t, p("home/.cache/go-build"), p("sys/via-home"))
	symlink(t, "loop", p("sys/loop"))
	if err := os.Mkdir(p("shared"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p("shared"), 0o1777); err != nil {
		t.Fatal(err)
	}
	symlink(t, p("real"), p("shared/link"))

	for _, tc := range []struct {
		path, want, link string
	}{
		{path: "sys/abs/sub", want: "real/sub"},
		{path: "sys/rel", want: "real/sub"},
		{path: "sys/rel/..", want: "real"}, // .. of the link's target, as the kernel does
		{path: "home/.cache/go-build", link: "home/.cache/go-build"},
		{path: "tmp/link/sub", link: "tmp/link"},
		{path: "sys/via-home", link: "home/.cache/go-build"},
		{path: "shared/link", link: "shared/link"},
	} {
		got, err := ResolvePath(p(tc.path))
		var le *LinkError
		switch {
		case tc.link == "" && (err != nil || got != p(tc.want)):
			t.Errorf("ResolvePath(%s) = %q, %v; want %q", tc.path, got, err, p(tc.want))
		case tc.link != "" && (!errors.As(err, &le) || le.Link != p(tc.link)):
			t.Errorf("ResolvePath(%s) = %q, %v; want a LinkError naming %s", tc.path, got, err, p(tc.link))
		case tc.link != "" && !strings.Contains(err.Error(), p(tc.link)):
			t.Errorf("ResolvePath(%s): %q does not name the link", tc.path, err)
		}
	}
	if _, err := ResolvePath(p("sys/loop")); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("ResolvePath of a loop: %v, want ELOOP", err)
	}
}

// TestWrapRefusesLinks: a path of Writable reached through a link that a
// sandbox could have made fails Wrap with the link named; one of Caches is
// left out and named in LeftOut; a link in a system directory is
// followed.
func TestWrapRefusesLinks(t *testing.T) {
	need(t, false)
	base := linkTree(t)
	p := func(rel string) string { return filepath.Join(base, rel) }
	symlink(t, p("home"), p("home/.cache/opencode"))
	symlink(t, p("real"), p("ws/sub/out"))
	symlink(t, p("real"), p("sys/data"))

	for _, tc := range []struct {
		name     string
		writable []string
		link     string
	}{
		{"in the home directory", []string{p("ws"), p("home/.cache/opencode")}, p("home/.cache/opencode")},
		{"in another writable path", []string{p("ws"), p("ws/sub/out")}, p("ws/sub/out")},
	} {
		pol := &Policy{Mode: WorkspaceWrite, Writable: tc.writable, WithoutMountNamespace: true, BestEffort: true}
		_, err := pol.Wrap(exec.Command("/bin/true"))
		var le *LinkError
		if !errors.As(err, &le) || le.Link != tc.link || !strings.Contains(err.Error(), tc.link) {
			t.Errorf("%s: Wrap = %v, want a LinkError naming %s", tc.name, err, tc.link)
		}
	}

	pol := &Policy{Mode: WorkspaceWrite, Writable: []string{p("ws"), p("sys/data")}, WithoutMountNamespace: true, BestEffort: true}
	a := wrap(t, pol, exec.Command("/bin/true"))
	if !slices.Contains(a.Writable, p("real")) {
		t.Errorf("a link in a system directory: Writable %q, want %s in it", a.Writable, p("real"))
	}

	// The caches: ~/.cache/go-build planted, the rest as a new user has
	// them (missing, skipped without a word).
	symlink(t, p("home"), p("home/.cache/go-build"))
	pol = &Policy{Mode: WorkspaceWrite, Writable: []string{p("ws")}, Caches: DefaultCaches(), WithoutMountNamespace: true, BestEffort: true}
	a = wrap(t, pol, exec.Command("/bin/true"))
	if len(a.LeftOut) != 1 || !strings.Contains(a.LeftOut[0], p("home/.cache/go-build")) {
		t.Errorf("LeftOut = %q, want the go-build link named", a.LeftOut)
	}
	if slices.Contains(a.Writable, p("home")) || !slices.Contains(a.Writable, p("home/.cache")) {
		t.Errorf("Writable = %q: want ~/.cache, not the home directory", a.Writable)
	}
	if !strings.Contains(a.String(), "left out: ") {
		t.Errorf("String() = %q does not name what was left out", a.String())
	}
	if got := DefaultWritable(p("ws")); slices.Contains(got, p("home/.cache/go-build")) {
		t.Errorf("DefaultWritable = %q lists the planted link", got)
	}
}

// TestMkdirAll: directories are made real, below system links; a link
// where a sandbox could have made one is refused, and nothing is made
// through it.
func TestMkdirAll(t *testing.T) {
	base := linkTree(t)
	p := func(rel string) string { return filepath.Join(base, rel) }
	symlink(t, p("real"), p("sys/data"))
	symlink(t, p("home"), p("home/.cache/opencode"))

	got, err := MkdirAll(p("sys/data/new/dir"), 0o700)
	if err != nil || got != p("real/new/dir") {
		t.Fatalf("MkdirAll below a system link = %q, %v", got, err)
	}
	if fi, err := os.Lstat(p("real/new/dir")); err != nil || !fi.IsDir() {
		t.Errorf("not made: %v", err)
	}
	var le *LinkError
	if _, err := MkdirAll(p("home/.cache/opencode/x"), 0o700); !errors.As(err, &le) || le.Link != p("home/.cache/opencode") {
		t.Errorf("MkdirAll through a planted link: %v, want a LinkError naming it", err)
	}
	mustNotExist(t, p("home/x"))
	if _, err := MkdirAll(p("home/.cache/opencode"), 0o700); !errors.As(err, &le) {
		t.Errorf("MkdirAll of a planted link: %v, want a LinkError", err)
	}
}

// TestCachesGitSearchCut: the search for repositories keeps a budget in
// the caches, and a cut there is reported.
func TestCachesGitSearchCut(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	need(t, false)
	ws, cache := t.TempDir(), t.TempDir()
	for i := range gitSearchBudget + 10 {
		if err := os.Mkdir(filepath.Join(cache, fmt.Sprintf("d%05d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := &Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Caches: []string{cache}, WithoutMountNamespace: true, BestEffort: true}
	a := wrap(t, pol, exec.Command("/bin/true"))
	if !a.GitSearchCut || !strings.Contains(a.String(), "caches cut short") {
		t.Errorf("Applied %v: want the cut in the caches named", a)
	}
}

// FuzzResolve: where no link is refused, the resolver finds what
// filepath.EvalSymlinks finds (the kernel's answer), for any path into a
// tree of links: absolute and relative, chained, with "..", dangling, a
// loop.
func FuzzResolve(f *testing.F) {
	base := f.TempDir()
	for _, d := range []string{"a/b/c", "d"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"a/up":     "..",
		"a/b/abs":  filepath.Join(base, "d"),
		"a/b/rel":  "c/../../b",
		"d/chain":  "../a/b/rel",
		"d/gone":   "nowhere",
		"d/loop":   "loop",
		"d/toroot": "/",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{"a/b/c", "a/up/d", "a/b/abs/chain/c", "d/chain/../..", "d/gone", "d/loop/x", "d/toroot/tmp", "a//b/./c/..", "a/b/rel/rel/abs"} {
		f.Add(s)
	}
	r := &resolver{}
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.IndexByte(rel, 0) >= 0 || len(rel) > 256 {
			return
		}
		path := base + "/" + rel
		got, _, err := r.resolve(path)
		var le *LinkError
		if errors.As(err, &le) {
			return // a link in a world-writable directory (/tmp) is refused: stricter
		}
		want, werr := filepath.EvalSymlinks(path)
		if werr == nil {
			want, werr = filepath.Abs(want)
		}
		switch {
		case err == nil && werr == nil && got != want:
			t.Errorf("resolve(%q) = %q, EvalSymlinks %q", rel, got, want)
		case err == nil && werr != nil:
			t.Errorf("resolve(%q) = %q, EvalSymlinks failed: %v", rel, got, werr)
		case err != nil && werr == nil:
			t.Errorf("resolve(%q) failed (%v), EvalSymlinks = %q", rel, err, want)
		}
	})
}
