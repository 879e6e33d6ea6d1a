package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program built again unchanged is not linked again: both callers get
// the same file. Once its source changes, the next caller gets the new
// program and the earlier caller keeps the one it had.
func TestGoBuildSharesUnchangedBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program three times")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	mod := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.21\n")
	main := func(greeting string) string {
		return "package main\n\nfunc main() { println(\"" + greeting + "\") }\n"
	}
	write("main.go", main("one"))
	t.Chdir(mod)
	if shared, ok := sharedBuildDir([]string{"build", "example.com/hello"}); ok {
		t.Cleanup(func() { os.RemoveAll(shared) })
	}
	build := func() string {
		t.Helper()
		bin, err := GoBuild(t.TempDir(), "hello", "build", "example.com/hello")
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	run := func(bin string) string {
		t.Helper()
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		return strings.TrimSpace(string(out))
	}

	first, second := build(), build()
	if got := run(second); got != "one" {
		t.Errorf("second build prints %q, want one", got)
	}
	a, errA := os.Stat(first)
	b, errB := os.Stat(second)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Errorf("an unchanged program was built anew (%v, %v): the builds are not shared", errA, errB)
	}

	write("main.go", main("two"))
	if got := run(build()); got != "two" {
		t.Errorf("after the change the build prints %q, want two", got)
	}
	if got := run(first); got != "one" {
		t.Errorf("the first caller's program prints %q after a later build, want one", got)
	}
}
