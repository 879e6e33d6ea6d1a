package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDefaultWritable(t *testing.T) {
	home := t.TempDir()
	cache := filepath.Join(home, "xdg-cache")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("GOCACHE", "")
	t.Setenv("GOMODCACHE", "")
	t.Setenv("GOPATH", filepath.Join(home, "gopath")+string(filepath.ListSeparator)+filepath.Join(home, "other"))
	t.Setenv("npm_config_cache", "")
	t.Setenv("PIP_CACHE_DIR", filepath.Join(home, "pip"))
	t.Setenv("CARGO_HOME", "")
	mk := func(elem ...string) string {
		p := filepath.Join(append([]string{home}, elem...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// What exists is listed; what does not (npm, cargo git) is not.
	goBuild := mk("xdg-cache", "go-build")
	mod := mk("gopath", "pkg", "mod")
	pip := mk("pip")
	cargoReg := mk(".cargo", "registry")
	root := mk("ws")

	got := DefaultWritable(root)
	want := []string{root, goBuild, mod, pip, cargoReg, cache}
	if runtimeUserCacheDirIgnoresXDG() {
		want = []string{root, mod, pip, cargoReg}
	}
	if !slices.Equal(got, want) {
		t.Errorf("DefaultWritable:\n got %q\nwant %q", got, want)
	}

	t.Setenv("GOCACHE", "off")
	if slices.Contains(DefaultWritable(root), goBuild) {
		t.Errorf("GOCACHE=off: the default go-build cache is still listed")
	}
}

// runtimeUserCacheDirIgnoresXDG is true where os.UserCacheDir does not
// follow XDG_CACHE_HOME (macOS, Windows).
func runtimeUserCacheDirIgnoresXDG() bool {
	d, err := os.UserCacheDir()
	return err != nil || d != os.Getenv("XDG_CACHE_HOME")
}

func TestAppliedCleanup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	given := &Applied{TempDir: tmp}
	if err := given.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("Cleanup removed a TempDir the caller gave: %v", err)
	}
	own := &Applied{TempDir: tmp, ownTemp: true}
	if err := own.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Cleanup left the TempDir Wrap made: %v", err)
	}
}
