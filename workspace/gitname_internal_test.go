package workspace

// Tests of the unexported .git name rules: which names are a .git and
// which paths a gitdir file points to.

import (
	"slices"
	"strings"
	"testing"
)

func TestIsDotGit(t *testing.T) {
	for _, n := range []string{".git", ".GIT", ".Git", ".gIt", ".git.", ".git ", ".git. .", ".git::$INDEX_ALLOCATION", "GIT~1", "git~1", "\u200c.git", ".g\ufeffit", ".gi\u206at"} {
		if !isDotGit(n) {
			t.Errorf("isDotGit(%q) = false", n)
		}
	}
	for _, n := range []string{"", ".", "..", "git", ".gitignore", ".github", ".gitmodules", "x.git", ".git~1", "git~2", ".gît", ".g_it"} {
		if isDotGit(n) {
			t.Errorf("isDotGit(%q) = true", n)
		}
	}
}

func TestGitdirTargets(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"gitdir: ../main/.git/worktrees/wt\n", []string{"../main/.git/worktrees/wt"}},
		{"gitdir: /abs/gd\r\n", []string{"/abs/gd"}},
		{"gitdir: gd\r\n\r\n\n", []string{"gd"}},
		{"gitdir:  spaced dir \n", []string{" spaced dir ", "spaced dir"}},
		{"GITDIR:gd\n", []string{"gd"}},
		{"\ufeffgitdir: gd\n", []string{"gd"}},
		{"gitdir: a\nb\n", []string{"a\nb", "a"}},
		{"gitdir: \n", nil},
		{"gitdir: a\x00b\n", nil},
		{"ref: refs/heads/main\n", nil},
		{"", nil},
	} {
		if got := gitdirTargets([]byte(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("gitdirTargets(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzGitdirTargets: any content gives at most two distinct non-empty
// paths without NUL, none longer than the content, and a well-formed line
// gives its path.
func FuzzGitdirTargets(f *testing.F) {
	for _, s := range []string{"gitdir: ../gd\n", "gitdir: /a\r\n", "GitDir:  x  \n", "\ufeffgitdir:y", "gitdir: a\nb", "gitdir:\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := gitdirTargets(b)
		if len(got) > 2 || (len(got) == 2 && got[0] == got[1]) {
			t.Fatalf("%q: %q", b, got)
		}
		for _, p := range got {
			if p == "" || strings.ContainsRune(p, 0) || len(p) > len(b) {
				t.Fatalf("%q: bad path %q", b, p)
			}
		}
		// The path of "gitdir: P\n", P a clean single line.
		p := string(b)
		if p != "" && !strings.ContainsAny(p, "\x00\r\n") && strings.TrimSpace(p) == p {
			if got := gitdirTargets([]byte("gitdir: " + p + "\n")); !slices.Contains(got, p) {
				t.Fatalf("gitdir: %q gave %q", p, got)
			}
		}
	})
}

// FuzzIsDotGit: every case of ".git" is .git; a name shorter than four
// bytes, or with a separator before any ":", never is.
func FuzzIsDotGit(f *testing.F) {
	for _, s := range []string{".git", ".GiT.", "git~1", ".g\u200dit", "x/.git"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := isDotGit(s)
		if strings.EqualFold(s, ".git") && !got {
			t.Fatalf("isDotGit(%q) = false", s)
		}
		// What NTFS drops after a ":" (a stream's name) may hold anything.
		if name, _, _ := strings.Cut(s, ":"); got && (len(s) < 4 || strings.ContainsAny(name, "/\\")) {
			t.Fatalf("isDotGit(%q) = true", s)
		}
	})
}

// BenchmarkWriteTextFile: the cost of the walk, a write four directories
// deep in a repository, with and without the policy that guards git.
