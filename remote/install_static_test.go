package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestModulePath(t *testing.T) {
	for in, want := range map[string]string{
		"module github.com/acpterm/acpterm\n\ngo 1.26.0\n": "github.com/acpterm/acpterm",
		"// c\nmodule \"example.com/q\"\n":                 "example.com/q",
		"\tmodule\tx.org/y // trailing\n":                  "x.org/y // trailing",
		"modules x\n":                                      "",
		"go 1.26\n":                                        "",
	} {
		if got := modulePath([]byte(in)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSourceOf: a release is rebuilt from path@version with the build's
// own flags; a build of a checkout from the module's directory found
// above this package's file; a -trimpath build of a checkout, or one
// whose checkout is not that module, is refused with the reason.
func TestSourceOf(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(mod, "remote", "x.go")
	bi := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Path: "example.com/m/cmd/acpterm", Main: debug.Module{Path: "example.com/m", Version: version}, Settings: settings}
	}
	s, err := sourceOf(bi("v1.2.3", debug.BuildSetting{Key: "-tags", Value: "netgo"}, debug.BuildSetting{Key: "-trimpath", Value: "true"},
		debug.BuildSetting{Key: "CGO_ENABLED", Value: "1"}), "example.com/m/remote/x.go")
	if err != nil || s.dir != "" || s.pkg != "example.com/m/cmd/acpterm@v1.2.3" || strings.Join(s.flags, " ") != "-tags=netgo -trimpath" {
		t.Errorf("release: %+v, %v", s, err)
	}
	s, err = sourceOf(bi("(devel)", debug.BuildSetting{Key: "-ldflags", Value: "-s -w"}), file)
	if err != nil || s.dir != mod || s.pkg != "./cmd/acpterm" || strings.Join(s.flags, " ") != "-ldflags=-s -w" {
		t.Errorf("checkout: %+v, %v", s, err)
	}
	if _, err := sourceOf(bi(""), "example.com/m/remote/x.go"); err == nil || !strings.Contains(err.Error(), "-trimpath") {
		t.Errorf("a -trimpath build of a checkout: %v", err)
	}
	other := bi("")
	other.Main.Path = "example.com/other"
	if _, err := sourceOf(other, file); err == nil || !strings.Contains(err.Error(), "not the module example.com/other") {
		t.Errorf("another module's checkout: %v", err)
	}
	if _, err := sourceOf(nil, file); err == nil {
		t.Error("no build information: no error")
	}
}

// TestChangedSince: a checkout is built from only while none of the
// files its static build compiles, nor their directories, changed after
// the executable was written: a changed file (its mtime set back, which
// moves the ctime), a file planted in a package's directory, a changed
// go.mod are each found; a file the build does not compile is not.
func TestChangedSince(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	mod := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(mod, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("cmd/acpterm/main.go", "package main\n\nimport _ \"example.com/m/lib\"\n\nfunc main() {}\n")
	write("lib/lib.go", "package lib\n")
	write("lib/lib_test.go", "package lib\n")
	write("docs/notes.md", "notes\n")
	src := buildSource{dir: mod, pkg: "./cmd/acpterm"}
	// baseline is the executable's mtime: a time after everything
	// written so far, by the file system's clock.
	baseline := func() time.Time {
		t.Helper()
		b := time.Now()
		waitTick(t, b)
		return b
	}
	changed := func(since time.Time) string {
		t.Helper()
		got, err := changedSince(context.Background(), goCmd, src, "linux", "amd64", since)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	b := baseline()
	if got := changed(b); got != "" {
		t.Fatalf("unchanged: %q", got)
	}
	// A test file and a document are not compiled.
	write("lib/lib_test.go", "package lib\n\n// changed\n")
	write("docs/notes.md", "changed\n")
	if got := changed(b); got != "" {
		t.Errorf("after a test file and a document changed: %q", got)
	}
	// A compiled file changed, its mtime set back to before the build.
	b = baseline()
	write("lib/lib.go", "package lib\n\nvar X = 1\n")
	old := b.Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(mod, "lib/lib.go"), old, old); err != nil {
		t.Fatal(err)
	}
	if got := changed(b); got != filepath.Join(mod, "lib/lib.go") {
		t.Errorf("after lib.go changed: %q", got)
	}
	// A file planted beside the package's: it and its directory changed.
	b = baseline()
	write("lib/planted.go", "package lib\n")
	if got := changed(b); got != filepath.Join(mod, "lib") && got != filepath.Join(mod, "lib/planted.go") {
		t.Errorf("after a file was planted: %q", got)
	}
	b = baseline()
	write("go.mod", "module example.com/m\n\ngo 1.22\n\n// changed\n")
	if got := changed(b); got != filepath.Join(mod, "go.mod") {
		t.Errorf("after go.mod changed: %q", got)
	}
}

// waitTick waits until a file written now gets a ctime after t (the
// file system's clock is coarser than time.Now's).
func waitTick(t *testing.T, after time.Time) {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "tick")
	for i := 0; ; i++ {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := changeTime(probe)
		if err != nil {
			t.Fatal(err)
		}
		if c.After(after) {
			return
		}
		if i > 1000 {
			t.Fatal("the file system's clock does not move")
		}
		time.Sleep(time.Millisecond)
	}
}
