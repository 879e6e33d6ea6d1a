//go:build unix

package remote_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
	"github.com/acpterm/acpterm/workspace"
)

// TestFS: fs/read_text_file and fs/write_text_file on the target answer
// as the workspace package answers here, for the same roots: the same
// content, and for each refusal the same code and message.
func TestFS(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("no\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := serve(t, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: dir}}, nil)
	local, err := workspace.NewWorkspace([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ctx := testCtx(t)

	path := filepath.Join(dir, "sub", "f.txt")
	if _, err := s.c.Files().WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: "one\ntwo\nthree\n"}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("on disk: %q", b)
	}
	line, limit := uint32(2), uint32(1)
	got, err := s.c.Files().ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: "s", Path: path, Line: &line, Limit: &limit})
	if err != nil || got.Content != "two\n" {
		t.Errorf("read line 2: %+v, %v", got, err)
	}

	for _, tc := range []struct {
		name  string
		read  *acp.ReadTextFileRequest
		write *acp.WriteTextFileRequest
	}{
		{name: "outside the roots", read: &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(outside, "secret")}},
		{name: "relative", read: &acp.ReadTextFileRequest{SessionID: "s", Path: "sub/f.txt"}},
		{name: "missing", read: &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(dir, "nope")}},
		{name: "a directory", read: &acp.ReadTextFileRequest{SessionID: "s", Path: filepath.Join(dir, "sub")}},
		{name: "write outside", write: &acp.WriteTextFileRequest{SessionID: "s", Path: filepath.Join(outside, "new"), Content: "x"}},
		{name: "write without its directory", write: &acp.WriteTextFileRequest{SessionID: "s", Path: filepath.Join(dir, "no", "f"), Content: "x"}},
	} {
		var remoteErr, localErr error
		if tc.read != nil {
			_, remoteErr = s.c.Files().ReadTextFile(ctx, tc.read)
			_, localErr = local.ReadTextFile(ctx, tc.read)
		} else {
			_, remoteErr = s.c.Files().WriteTextFile(ctx, tc.write)
			_, localErr = local.WriteTextFile(ctx, tc.write)
		}
		if localErr == nil {
			t.Fatalf("%s: the workspace here allowed it", tc.name)
		}
		want := acp.WireError(localErr)
		if acp.ErrorCode(remoteErr) != want.Code || remoteErr.Error() != want.Message {
			t.Errorf("%s: on the target %d %q, here %d %q", tc.name, acp.ErrorCode(remoteErr), remoteErr, want.Code, want.Message)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a write outside the roots landed")
	}
}

// TestFSBounds: a write too large for the server's message limit is
// refused by the client, and the connection goes on.
func TestFSBounds(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	s := serve(t, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: dir}}, nil)
	ctx := testCtx(t)
	path := filepath.Join(dir, "big")
	_, err := s.c.Files().WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: strings.Repeat("x", remote.DefaultServerMaxMessage)})
	if acp.ErrorCode(err) != acp.CodeInvalidParams || !strings.Contains(err.Error(), "write it in a terminal") {
		t.Errorf("a write of 4 MiB: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the large write landed")
	}
	content := strings.Repeat("y", 3<<20)
	if _, err := s.c.Files().WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: content}); err != nil {
		t.Fatalf("a write of 3 MiB: %v", err)
	}
	got, err := s.c.Files().ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: "s", Path: path})
	if err != nil {
		t.Fatalf("reading it back: %v", err)
	}
	if got.Content != content {
		t.Errorf("read back %d bytes, want %d", len(got.Content), len(content))
	}
}
