package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestWriteDoesNotReachHardLinkTarget: a hard link in the root to a file
// outside it is a name inside the root, but a write through it must not
// change the outside file: the write replaces the name, not the inode.
func TestWriteDoesNotReachHardLinkTarget(t *testing.T) {
	ws, root, outside := testWorkspace(t)
	secret, link := filepath.Join(outside, "secret.txt"), filepath.Join(root, "hardlink.txt")
	if err := os.Link(secret, link); err != nil {
		t.Skipf("hard link: %v", err)
	}
	_, err := ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: link, Content: "pwned\n"})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret\n" {
		t.Errorf("the file outside (-want +got):\n-%q\n+%q (%v)", "secret\n", b, err)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != "pwned\n" {
		t.Errorf("the name inside (-want +got):\n-%q\n+%q (%v)", "pwned\n", b, err)
	}
}

// TestWriteKeepsModeAndLeavesNoTemp: a write keeps the replaced file's
// permissions, and leaves nothing else in its directory.
func TestWriteKeepsModeAndLeavesNoTemp(t *testing.T) {
	ws, root, _ := testWorkspace(t)
	dir := filepath.Join(root, "sub")
	for name, mode := range map[string]os.FileMode{"script.sh": 0o755, "private.txt": 0o600} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: "new\n"}); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v after the write, want %v", name, fi.Mode(), mode)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // up-link.txt, script.sh, private.txt
		t.Errorf("the directory holds %q, want up-link.txt, script.sh and private.txt", names)
	}
}
