//go:build unix

package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

// TestWritePolicyGitFIFO: a .git that is a FIFO (or a symlink to one) is
// never opened, so it cannot hang the write beside it; git ignores it, and
// so does the policy.
func TestWritePolicyGitFIFO(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"fifo", "fifolink"} {
		mkdir(t, filepath.Join(root, d))
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo", ".git"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../fifo/.git", filepath.Join(root, "fifolink", ".git"))
	for _, rel := range []string{"fifo/file.txt", "fifolink/file.txt"} {
		done := make(chan error, 1)
		go func() { done <- writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, rel) }()
		select {
		case err := <-done:
			if err != nil || !isPlanted(root, rel) {
				t.Errorf("write %s beside a FIFO .git: %v", rel, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("write %s beside a FIFO .git hangs", rel)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "fifo", ".git")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}

// TestWritePolicyGitLinkOut: a .git symlink to a .git file outside the
// roots is read where it leads, as git reads it, and the gitdir it names
// back inside is refused.
func TestWritePolicyGitLinkOut(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	mkdir(t, filepath.Join(root, "ext", "gd"))
	mkdir(t, outside)
	writeFile(t, filepath.Join(outside, "gitfile"), "gitdir: "+filepath.Join(root, "ext", "gd")+"\n")
	symlink(t, filepath.Join(outside, "gitfile"), filepath.Join(root, "ext", ".git"))
	err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, "ext/gd/config")
	if acp.ErrorCode(err) != acp.CodePermissionDenied || !strings.Contains(err.Error(), "the git directory that") {
		t.Errorf("write ext/gd/config: %v, want a refusal", err)
	}
	if err := writeIn(t, root, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}, "ext/file.txt"); err != nil {
		t.Errorf("write ext/file.txt: %v", err)
	}
}
