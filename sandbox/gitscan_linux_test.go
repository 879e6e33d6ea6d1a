package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNestedGit: the repositories inside a writable directory are
// read-only down to gitSearchDepth, the directory a .git file points to
// as well; deeper ones, and the rest of the tree, are writable.
func TestNestedGit(t *testing.T) {
	t.Parallel()
	both(t, testNestedGit)
}

func testNestedGit(t *testing.T, b box) {
	need(t, true)
	root, _ := workspace(t)
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("vendor/lib/.git/hooks")
	mk("a/b/c/d/.git")
	mk("a/b/c/d/e/.git") // depth 5: past the search
	gitdir := mk("store/modules/sub")
	mk("sub")
	if err := os.WriteFile(filepath.Join(root, "sub/.git"), []byte("gitdir: ../store/modules/sub\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bare repository, and a git directory beside its work tree that a
	// .git symlink names.
	for _, d := range []string{"bare.git/objects", "bare.git/refs", "gd/objects", "gd/refs", "wt"} {
		mk(d)
	}
	for _, f := range []string{"bare.git/HEAD", "gd/HEAD"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../gd", filepath.Join(root, "wt/.git")); err != nil {
		t.Fatal(err)
	}
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}}
	for _, rel := range []string{"bare.git/config", "bare.git/hooks", "gd/config", ".git/config", "vendor/lib/.git/config", "vendor/lib/.git/hooks/post-checkout", "a/b/c/d/.git/config", "store/modules/sub/config"} {
		b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, rel))
	}
	// The .git file itself cannot be pointed elsewhere.
	b.wantAct(t, p, root, "EROFS", "write", filepath.Join(root, "sub/.git"))
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "a/b/c/d/e/.git/config"))
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "vendor/lib/main.go"))
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "store/other"))
	if _, err := os.Stat(filepath.Join(gitdir, "config")); err == nil {
		t.Error("the gitdir target was written")
	}
	p.WritableGit = true
	b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "vendor/lib/.git/config"))
}

// TestFindGitBudget: the search in the caches stops at its budget and
// says so.
func TestFindGitBudget(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 3 {
		if err := os.MkdirAll(filepath.Join(root, "d", strings.Repeat("x", i+1), ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	found, cut, err := findGit([]string{root}, 0, rootSearchMax, 100)
	if len(found) != 3 || cut || err != nil {
		t.Fatalf("findGit = %v, cut %v, %v; want 3 repositories", found, cut, err)
	}
	// root, d, and one of the three: the rest are not read.
	found, cut, err = findGit([]string{root}, 0, rootSearchMax, 3)
	if len(found) != 1 || !cut || err != nil {
		t.Fatalf("findGit with a budget of 3 = %v, cut %v, %v; want one repository, cut", found, cut, err)
	}
	// As a root (Policy.Writable), the budget does not apply; past its
	// own bound, the search fails rather than leave a repository out.
	found, cut, err = findGit([]string{root}, 1, rootSearchMax, 3)
	if len(found) != 3 || cut || err != nil {
		t.Fatalf("findGit of a root with a budget of 3 = %v, cut %v, %v; want 3 repositories", found, cut, err)
	}
	if _, _, err = findGit([]string{root}, 1, 3, 100); err == nil || !strings.Contains(err.Error(), root) {
		t.Fatalf("findGit of a root past its bound: %v, want an error naming %s", err, root)
	}
}

// TestFindGitLeaves: directories without subdirectories are not read
// whole, and the search finds the same as one that reads every directory:
// a worktree's .git file and a .git symlink in such a leaf included.
func TestFindGitLeaves(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil || !leafCountingFS[int64(fs.Type)] {
		t.Skipf("%s is not on a filesystem that counts subdirectories (type %#x)", root, fs.Type)
	}
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		write(fmt.Sprintf("cache/%02x/entry-a", i), "x") // 50 leaves
	}
	write("modules/sub/HEAD", "ref: refs/heads/main\n")
	for _, d := range []string{"modules/sub/objects", "modules/sub/refs", "repo/.git"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("wt/.git", "gitdir: ../modules/sub\n") // a leaf with a .git file
	if err := os.MkdirAll(filepath.Join(root, "link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../repo/.git", filepath.Join(root, "link/.git")); err != nil { // a leaf with a .git symlink
		t.Fatal(err)
	}
	every := &gitSearch{dirs: []string{root}, budget: 1000, seen: map[string]bool{}, everyLeaf: true}
	leaves := &gitSearch{dirs: []string{root}, budget: 1000, seen: map[string]bool{}}
	if _, cut := every.run(0, 1); cut {
		t.Fatal("the budget ran out")
	}
	if _, cut := leaves.run(0, 1); cut {
		t.Fatal("the budget ran out")
	}
	slices.Sort(every.found)
	slices.Sort(leaves.found)
	// The symlink adds its target, which repo/.git is already.
	want := []string{"modules/sub", "repo/.git", "wt/.git"}
	for i, w := range want {
		want[i] = filepath.Join(root, w)
	}
	if !slices.Equal(leaves.found, want) || !slices.Equal(every.found, want) {
		t.Errorf("found %q skipping leaves, %q reading them, want %q", leaves.found, every.found, want)
	}
	// root, cache, modules and link are read (link holds a symlink only,
	// so counts as a leaf): not the 50 shards, wt or repo.
	if leaves.listed >= 10 || every.listed < 50 {
		t.Errorf("directories read: %d skipping leaves, %d not", leaves.listed, every.listed)
	}
}

func FuzzParseGitdir(f *testing.F) {
	for _, s := range []string{"gitdir: ../x\n", "gitdir: /abs/path\r\n", "gitdir:x", "", "gitdir: \n", "gitdir: a\x00b", "gitdir: ok   \t\r\nmore"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir, ok := parseGitdir(b)
		if !ok {
			if dir != "" {
				t.Fatalf("not ok with %q", dir)
			}
			return
		}
		if dir == "" || strings.ContainsAny(dir, "\x00\n") || dir != filepath.Clean(dir) {
			t.Fatalf("parseGitdir(%q) = %q", b, dir)
		}
		if !strings.HasPrefix(string(b), "gitdir: ") {
			t.Fatalf("accepted %q without the prefix", b)
		}
	})
}
