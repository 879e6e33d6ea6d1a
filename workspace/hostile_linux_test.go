package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
)

// TestFailedWriteKeepsFile: a write that fails midway (here past
// RLIMIT_FSIZE, which fails the write(2) with EFBIG as a full disk fails it
// with ENOSPC; the Go runtime ignores SIGXFSZ) leaves the file it was to
// replace as it was, neither truncated nor half written, and leaves no
// temporary file behind.
func TestFailedWriteKeepsFile(t *testing.T) {
	ws, root, _ := testWorkspace(t)
	path := filepath.Join(root, "sub", "keep.txt")
	const old = "precious\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &saved); err != nil {
		t.Fatal(err)
	}
	limited := saved
	limited.Cur = 4096
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &limited); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	_, err := ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: strings.Repeat("x", 8192)})
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &saved); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("a write past RLIMIT_FSIZE succeeded")
	}
	if b, rerr := os.ReadFile(path); rerr != nil || string(b) != old {
		t.Errorf("after a failed write (%v) the file holds (-want +got):\n-%q\n+%d bytes %.20q (%v)", err, old, len(b), b, rerr)
	}
	entries, rerr := os.ReadDir(filepath.Dir(path))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(entries) != 2 { // up-link.txt and keep.txt
		t.Errorf("the directory holds %d entries after a failed write, want 2", len(entries))
	}
}

// TestWriteKeepsOwner: the file a write replaces keeps its owner and group
// (as root, who may give a file away), as it did when written in place.
func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give a file to another user")
	}
	ws, root, _ := testWorkspace(t)
	path := filepath.Join(root, "sub", "theirs.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 12345, 23456
	if err := os.Chown(path, uid, gid); err != nil {
		t.Skipf("chown: %v", err)
	}
	if _, err := ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: "new\n"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Errorf("owner after the write %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
}
