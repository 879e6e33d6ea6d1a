package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

const planted = "planted\n"

// gitTree makes, under a new root, git's files as an agent may find them,
// and a directory outside the root; it returns both.
func gitTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{
		"", ".git/hooks", "a/b/.git", "a/b/src", ".github", "up/.GIT", "up/.Git",
		"wt/data/gd", "sp/inner", "abs/deep/gd", "out", "anc", "anc2", "sep", "bare/objects", "bare/refs",
		"huge/inner", "slnk/inner", "x",
	} {
		mkdir(t, filepath.Join(root, d))
	}
	mkdir(t, filepath.Join(outside, "gd"))
	for p, s := range map[string]string{
		".git/config":     "[core]\n",
		"a/b/.git/config": "[core]\n",
		"up/.GIT/config":  "[core]\n",
		"wt/.git":         "gitdir: data/gd\r\n",   // a worktree whose git directory lies below it
		"sp/.git":         "GitDir:   inner  \r\n", // as lenient readers take it
		"abs/.git":        "gitdir: " + filepath.Join(root, "abs", "deep", "gd") + "\n",
		"out/.git":        "gitdir: " + filepath.Join(outside, "gd") + "\n",
		"anc/.git":        "gitdir: ..\n",    // the root itself
		"anc2/.git":       "gitdir: ../..\n", // the directory above the root
		"sep/.git":        "gitdir: ../bare\n",
		"bare/HEAD":       "ref: refs/heads/main\n",
		"huge/.git":       "gitdir: inner\n" + strings.Repeat("\n", 1<<20),
		"plain.txt":       "plain\n",
		"a/b/src/main.go": "package main\n",
		".github/ci.yml":  "on: push\n",
	} {
		writeFile(t, filepath.Join(root, p), s)
	}
	symlink(t, ".git", filepath.Join(root, "link"))
	symlink(t, ".git/config", filepath.Join(root, "cfglink"))
	symlink(t, "inner", filepath.Join(root, "slnk", ".git"))
	return root, outside
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// gitWrites are writes into git's files, each with what the refusal says;
// plainWrites are ordinary ones, beside them.
var (
	gitWrites = []struct{ path, says string }{
		{".git/config", `inside ".git"`},
		{".git/hooks/post-checkout", `inside ".git"`},
		{".git/new-file", `inside ".git"`},
		{"a/b/.git/config", `inside ".git"`}, // a nested repository
		{"up/.GIT/config", `inside ".GIT"`},  // .git to a case-insensitive file system
		{"up/.Git/config", `inside ".Git"`},
		{"link/config", `inside ".git"`}, // a symlink to .git
		{"a/../.git/config", `inside ".git"`},
		{"wt/data/gd/config", `the git directory that`},
		{"sp/inner/config", `the git directory that`},
		{"abs/deep/gd/hooks-file", `the git directory that`},
		{"cfglink", `inside ".git"`},               // a symlink to .git/config
		{"anc/file.txt", `the git directory that`}, // gitdir: .. names the root
		{"anc2/file.txt", `the git directory that`},
		{"bare/config", `is a git directory`}, // named by sep/.git, but not on the way
		{"huge/inner/x", `cannot be read as git would`},
		{"slnk/.git/config", `inside ".git"`}, // through the symlink
		{"slnk/inner/config", `the git directory that`},
		{"x/.git", `makes its directory a git repository`},
		{"x/.GIT", `makes its directory a git repository`},
		{"x/.git.", `makes its directory a git repository`},
		{"x/.g\u200cit", `makes its directory a git repository`},
		{"x/git~1", `makes its directory a git repository`},
	}
	plainWrites = []string{
		"plain.txt", "new.txt", ".gitignore", ".github/ci.yml", "a/b/src/main.go",
		"wt/file.txt", "sp/file.txt", "sep/file.txt", "abs/file.txt", "slnk/file.txt", "x/.gitx",
	}
)

// writeIn writes planted to the path rel of root through a Workspace of
// policy p.
func writeIn(t *testing.T, root string, p *workspace.WritePolicy, rel string) error {
	t.Helper()
	ws, err := workspace.NewWorkspace([]string{root}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: filepath.Join(root, rel), Content: planted})
	return err
}

func isPlanted(root, rel string) bool {
	b, err := os.ReadFile(filepath.Join(root, rel))
	return err == nil && string(b) == planted
}

// noTemp fails if a temporary file of replaceFile is left in the
// directories of rels.
func noTemp(t *testing.T, root string, rels []string) {
	t.Helper()
	for _, rel := range rels {
		entries, _ := os.ReadDir(filepath.Dir(filepath.Join(root, rel)))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".acpterm-") {
				t.Errorf("temporary file %s left beside %s", e.Name(), rel)
			}
		}
	}
}

// TestWritePolicyGit: in workspace-write, writes into git's files are
// refused however they are reached, with the reason, and nothing is
// written; ordinary files beside them are written.
func TestWritePolicyGit(t *testing.T) {
	root, _ := gitTree(t)
	p := &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}
	var rels []string
	for _, w := range gitWrites {
		rels = append(rels, w.path)
		err := writeIn(t, root, p, w.path)
		if got := acp.ErrorCode(err); got != acp.CodePermissionDenied || !strings.Contains(err.Error(), w.says) || !strings.Contains(err.Error(), "--writable-git") {
			t.Errorf("write %s: %v (code %d), want code %d saying %q", w.path, err, got, acp.CodePermissionDenied, w.says)
		}
		if isPlanted(root, w.path) {
			t.Errorf("write %s: the file was written", w.path)
		}
	}
	for _, rel := range plainWrites {
		rels = append(rels, rel)
		if err := writeIn(t, root, p, rel); err != nil || !isPlanted(root, rel) {
			t.Errorf("write %s: %v, written %v; want it written", rel, err, isPlanted(root, rel))
		}
	}
	noTemp(t, root, rels)
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config holds %q", b)
	}
}

// TestWritePolicyModes: read-only refuses every write, even of an ordinary
// file; --writable-git and --sandbox off let git's files be written.
func TestWritePolicyModes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		p      *workspace.WritePolicy
		gitOK  bool
		plain  bool
		refuse string
	}{
		{"read-only", &workspace.WritePolicy{Mode: sandbox.ReadOnly}, false, false, "the sandbox is read-only"},
		{"writable-git", &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite, WritableGit: true}, true, true, ""},
		{"off", &workspace.WritePolicy{Mode: sandbox.Off}, true, true, ""},
		{"nil", nil, true, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := gitTree(t)
			check := func(rel string, ok bool) {
				err := writeIn(t, root, tt.p, rel)
				switch {
				case ok && (err != nil || !isPlanted(root, rel)):
					t.Errorf("write %s: %v; want it written", rel, err)
				case !ok && (acp.ErrorCode(err) != acp.CodePermissionDenied || !strings.Contains(err.Error(), tt.refuse) || isPlanted(root, rel)):
					t.Errorf("write %s: %v (code %d), written %v; want code %d saying %q", rel, err, acp.ErrorCode(err), isPlanted(root, rel), acp.CodePermissionDenied, tt.refuse)
				}
			}
			for _, w := range gitWrites {
				check(w.path, tt.gitOK)
			}
			for _, rel := range plainWrites {
				check(rel, tt.plain)
			}
		})
	}
}

// TestWritePolicyOutside: a .git file whose gitdir leads out of the roots
// gives no way out: the write there is refused as outside, in every mode
// that writes.
func TestWritePolicyOutside(t *testing.T) {
	root, outside := gitTree(t)
	for _, p := range []*workspace.WritePolicy{{Mode: sandbox.WorkspaceWrite}, {Mode: sandbox.Off}} {
		ws, err := workspace.NewWorkspace([]string{root}, p)
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(outside, "gd", "config")
		for _, path := range []string{target, filepath.Join(root, "out", "..", "..", "outside", "gd", "config")} {
			_, err = ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: planted})
			if acp.ErrorCode(err) != acp.CodeInvalidParams || !strings.Contains(err.Error(), "outside the workspace") {
				t.Errorf("mode %v: write %s: %v, want outside the workspace", p.Mode, path, err)
			}
		}
		ws.Close()
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("mode %v: %s was written", p.Mode, target)
		}
	}
	// Writes beside the .git that points out are ordinary ones.
	if err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, "out/file.txt"); err != nil {
		t.Errorf("write out/file.txt: %v", err)
	}
}

// TestWritePolicyRoots: a root that is itself inside a .git, or is a git
// directory, takes no writes in workspace-write.
func TestWritePolicyRoots(t *testing.T) {
	base := t.TempDir()
	inGit := filepath.Join(base, "repo", ".git", "ws")
	bare := filepath.Join(base, "bare.git")
	for _, d := range []string{inGit, filepath.Join(bare, "objects"), filepath.Join(bare, "refs")} {
		mkdir(t, d)
	}
	writeFile(t, filepath.Join(bare, "HEAD"), "ref: refs/heads/main\n")
	for root, says := range map[string]string{inGit: `is inside ".git"`, bare: "is a git directory"} {
		err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, "file.txt")
		if acp.ErrorCode(err) != acp.CodePermissionDenied || !strings.Contains(err.Error(), says) {
			t.Errorf("root %s: %v, want a refusal saying %q", root, err, says)
		}
		if err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite, WritableGit: true}, "file.txt"); err != nil {
			t.Errorf("root %s with WritableGit: %v", root, err)
		}
	}
}

// TestWritePolicyReads: the policy confines writes only: git's files stay
// readable in every mode.
func TestWritePolicyReads(t *testing.T) {
	root, _ := gitTree(t)
	for _, m := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		ws, err := workspace.NewWorkspace([]string{root}, &workspace.WritePolicy{Mode: m})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ws.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(root, ".git", "config")})
		ws.Close()
		if err != nil || resp.Content != "[core]\n" {
			t.Errorf("mode %v: read .git/config: %v", m, err)
		}
	}
}

// TestWritePolicyHugeGitFile: a 1 MiB .git file is not read whole: the
// write beneath it is refused at once.
func TestWritePolicyHugeGitFile(t *testing.T) {
	root, _ := gitTree(t)
	start := time.Now()
	err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, "huge/inner/x")
	if acp.ErrorCode(err) != acp.CodePermissionDenied || !strings.Contains(err.Error(), "larger than 16 KiB") {
		t.Errorf("write beneath a huge .git: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func BenchmarkWriteTextFile(b *testing.B) {
	for _, m := range []sandbox.Mode{sandbox.Off, sandbox.WorkspaceWrite} {
		b.Run(m.String(), func(b *testing.B) {
			root := b.TempDir()
			if err := os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755); err != nil {
				b.Fatal(err)
			}
			dir := filepath.Join(root, "a", "b", "c", "d")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			ws, err := workspace.NewWorkspace([]string{root}, &workspace.WritePolicy{Mode: m})
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			req := &acp.WriteTextFileRequest{SessionID: "s", Path: filepath.Join(dir, "f.txt"), Content: "x\n"}
			for b.Loop() {
				if _, err := ws.WriteTextFile(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
