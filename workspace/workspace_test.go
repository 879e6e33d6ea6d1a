package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

func ptr[T any](v T) *T { return &v }

// workspace makes a root with a few files, a directory outside it and
// symlinks leading out.
func testWorkspace(t *testing.T) (ws *workspace.Workspace, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "lines.txt"), "one\ntwo\nthree\nfour\nfive")
	write(filepath.Join(root, "crlf.txt"), "a\r\nb\r\n")
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	symlink := func(target, link string) {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt"))
	symlink(outside, filepath.Join(root, "outdir"))
	symlink(filepath.Join(root, "lines.txt"), filepath.Join(root, "inside-link.txt"))
	symlink(filepath.Join(outside, "missing.txt"), filepath.Join(root, "dangling.txt"))
	symlink("lines.txt", filepath.Join(root, "rel-link.txt"))
	symlink("../lines.txt", filepath.Join(root, "sub", "up-link.txt"))
	symlink("../outside/secret.txt", filepath.Join(root, "rel-escape.txt"))
	ws, err := workspace.NewWorkspace([]string{root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, root, outside
}

func TestReadTextFile(t *testing.T) {
	ws, root, outside := testWorkspace(t)
	tests := []struct {
		name        string
		path        string
		line, limit *uint32
		want        string
		code        int64 // 0: success
		msg         string
	}{
		{name: "whole file", path: "lines.txt", want: "one\ntwo\nthree\nfour\nfive"},
		{name: "from line 2", path: "lines.txt", line: ptr[uint32](2), want: "two\nthree\nfour\nfive"},
		{name: "line 2, limit 2", path: "lines.txt", line: ptr[uint32](2), limit: ptr[uint32](2), want: "two\nthree\n"},
		{name: "limit 1", path: "lines.txt", limit: ptr[uint32](1), want: "one\n"},
		{name: "limit 0", path: "lines.txt", limit: ptr[uint32](0), want: ""},
		{name: "line 0 means 1", path: "lines.txt", line: ptr[uint32](0), limit: ptr[uint32](1), want: "one\n"},
		{name: "last line without newline", path: "lines.txt", line: ptr[uint32](5), want: "five"},
		{name: "past the end", path: "lines.txt", line: ptr[uint32](9), want: ""},
		{name: "limit past the end", path: "lines.txt", line: ptr[uint32](4), limit: ptr[uint32](10), want: "four\nfive"},
		{name: "CRLF kept", path: "crlf.txt", line: ptr[uint32](2), want: "b\r\n"},
		{name: "symlink inside", path: "inside-link.txt", limit: ptr[uint32](1), want: "one\n"},
		{name: "relative symlink inside", path: "rel-link.txt", limit: ptr[uint32](1), want: "one\n"},
		{name: "relative symlink up, inside", path: "sub/up-link.txt", limit: ptr[uint32](1), want: "one\n"},
		{name: "relative symlink escape", path: "rel-escape.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "relative", path: "REL:lines.txt", code: acp.CodeInvalidParams, msg: "not absolute"},
		{name: "missing", path: "nope.txt", code: acp.CodeResourceNotFound, msg: "not found"},
		{name: "outside", path: "OUT:secret.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "outside, missing", path: "OUT:nope.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "dot-dot escape", path: "../outside/secret.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "symlink escape", path: "escape.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "symlinked dir escape", path: "outdir/secret.txt", code: acp.CodeInvalidParams, msg: "outside the workspace"},
		{name: "directory", path: "sub", code: acp.CodeInvalidParams, msg: "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(root, tt.path)
			switch {
			case strings.HasPrefix(tt.path, "REL:"):
				path = strings.TrimPrefix(tt.path, "REL:")
			case strings.HasPrefix(tt.path, "OUT:"):
				path = filepath.Join(outside, strings.TrimPrefix(tt.path, "OUT:"))
			}
			resp, err := ws.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: path, Line: tt.line, Limit: tt.limit})
			if tt.code != 0 {
				if err == nil {
					t.Fatalf("read %s: got %q, want error %d", path, resp.Content, tt.code)
				}
				if got := acp.ErrorCode(err); got != tt.code || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("read %s: error %d %q, want %d containing %q", path, got, err, tt.code, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("read %s: %v", path, err)
			}
			if resp.Content != tt.want {
				t.Errorf("read %s: content %q, want %q", path, resp.Content, tt.want)
			}
		})
	}
}

func TestWriteTextFile(t *testing.T) {
	ws, root, outside := testWorkspace(t)
	ctx := context.Background()
	write := func(path, content string) error {
		_, err := ws.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: content})
		return err
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	newFile := filepath.Join(root, "sub", "new.txt")
	if err := write(newFile, "fresh\n"); err != nil {
		t.Fatalf("create: %v", err)
	}
	if got := read(newFile); got != "fresh\n" {
		t.Fatalf("created file has %q", got)
	}
	if fi, _ := os.Stat(newFile); fi.Mode().Perm() != 0o644 {
		t.Errorf("created file mode %v, want 0644", fi.Mode().Perm())
	}
	if err := write(newFile, "replaced"); err != nil || read(newFile) != "replaced" {
		t.Fatalf("overwrite: %v, %q", err, read(newFile))
	}
	if err := write(filepath.Join(root, "inside-link.txt"), "via link"); err != nil || read(filepath.Join(root, "lines.txt")) != "via link" {
		t.Fatalf("write through an inside symlink: %v", err)
	}

	refused := []struct {
		name, path, msg string
		code            int64
	}{
		{"relative", "x.txt", "not absolute", acp.CodeInvalidParams},
		{"missing parent", filepath.Join(root, "no", "dir", "x.txt"), "does not exist", acp.CodeInvalidParams},
		{"outside", filepath.Join(outside, "x.txt"), "outside the workspace", acp.CodeInvalidParams},
		{"symlink escape", filepath.Join(root, "escape.txt"), "outside the workspace", acp.CodeInvalidParams},
		{"relative symlink escape", filepath.Join(root, "rel-escape.txt"), "outside the workspace", acp.CodeInvalidParams},
		{"new file in symlinked dir", filepath.Join(root, "outdir", "x.txt"), "outside the workspace", acp.CodeInvalidParams},
		{"dangling symlink", filepath.Join(root, "dangling.txt"), "symlink to a missing file", acp.CodeInvalidParams},
		{"directory", filepath.Join(root, "sub"), "not a regular file", acp.CodeInvalidParams},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := write(tt.path, "nope")
			if err == nil || acp.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("write %s: %v (code %d), want code %d containing %q", tt.path, err, acp.ErrorCode(err), tt.code, tt.msg)
			}
		})
	}
	if got := read(filepath.Join(outside, "secret.txt")); got != "secret\n" {
		t.Fatalf("the file outside changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Fatal("a file was created outside the workspace")
	}
	if _, err := os.Stat(filepath.Join(outside, "missing.txt")); err == nil {
		t.Fatal("the dangling symlink's target was created")
	}
}

func TestNewWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, roots := range [][]string{nil, {filepath.Join(dir, "missing")}, {file}} {
		if _, err := workspace.NewWorkspace(roots, nil); err == nil {
			t.Errorf("NewWorkspace(%q) succeeded", roots)
		}
	}
	if _, err := workspace.NewWorkspace([]string{dir}, &workspace.WritePolicy{Mode: sandbox.Mode(9)}); err == nil {
		t.Error("NewWorkspace with an unknown sandbox mode succeeded")
	}
	ws, err := workspace.NewWorkspace([]string{dir, dir + "/."}, nil)
	if err != nil || len(ws.Roots()) != 2 {
		t.Fatalf("NewWorkspace: %v, %v", ws, err)
	}
	if err := ws.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := ws.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = ws.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: file})
	if got := acp.ErrorCode(err); got != acp.CodeInternalError {
		t.Fatalf("read after Close: %v (code %d), want code %d", err, got, acp.CodeInternalError)
	}
}
