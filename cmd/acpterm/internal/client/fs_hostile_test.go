package client

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// endlessLine is a reader of n bytes holding no newline: a sparse file of
// any size, as an agent can make with truncate(1), reads like this.
type endlessLine struct{ n, read int64 }

func (r *endlessLine) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	clear(p[:k])
	r.read += k
	return int(k), nil
}

// TestReadLinesCancelledInLongLine: a cancelled request stops reading even
// inside one endless line that it skips (line 2 of a huge sparse file),
// where no line boundary ever comes to check the context at.
func TestReadLinesCancelledInLongLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &endlessLine{n: 1 << 30}
	_, err := readLines(ctx, r, 2, nil, 1<<20)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("readLines after cancel: %v, want context.Canceled", err)
	}
	if r.read > 1<<20 {
		t.Errorf("readLines read %d MiB after its request was cancelled, want at most 1 MiB", r.read>>20)
	}
}

// TestWriteDoesNotReachHardLinkTarget: a hard link in the root to a file
// outside it is a name inside the root, but a write through it must not
// change the outside file: the write replaces the name, not the inode.
func TestWriteDoesNotReachHardLinkTarget(t *testing.T) {
	ws, root, outside := workspace(t)
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
	ws, root, _ := workspace(t)
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
