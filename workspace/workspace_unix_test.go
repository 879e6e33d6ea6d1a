//go:build unix

package workspace_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/workspace"
)

// specialFiles makes a FIFO, a character device (like /dev/null, when
// mknod is allowed), a socket and a directory in root, named by kind; a
// kind it could not make is mapped to the reason.
func specialFiles(t *testing.T, root string) (made []string, skipped map[string]string) {
	t.Helper()
	skipped = map[string]string{}
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	made = append(made, "fifo")
	// 1,3 is /dev/null on Linux: harmless even if it were written.
	if err := unix.Mknod(filepath.Join(root, "chardev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		skipped["chardev"] = "mknod: " + err.Error()
	} else {
		made = append(made, "chardev")
	}
	// A socket file stays after its listener is closed.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(root, "sock"), Net: "unix"})
	if err != nil {
		skipped["sock"] = err.Error()
	} else {
		l.SetUnlinkOnClose(false)
		l.Close()
		made = append(made, "sock")
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	made = append(made, "dir")
	return made, skipped
}

// TestSpecialFilesRefused: reading or writing a FIFO, device, socket or
// directory is refused at once, without blocking and without I/O on it.
func TestSpecialFilesRefused(t *testing.T) {
	ws, root, _ := testWorkspace(t)
	made, skipped := specialFiles(t, root)
	for kind, why := range skipped {
		t.Logf("no %s: %s", kind, why)
	}
	for _, name := range made {
		for _, op := range []string{"read", "write"} {
			t.Run(op+" "+name, func(t *testing.T) {
				path := filepath.Join(root, name)
				err := callBounded(t, ws, op, path, func() {
					// Unblock an open stuck on the FIFO, so that the
					// failure is reported instead of hanging the test.
					if f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				})
				wantRefused(t, op, path, err)
			})
		}
	}
	// The device is still one: nothing replaced or truncated it.
	if fi, err := os.Lstat(filepath.Join(root, "fifo")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO changed: %v, %v", fi, err)
	}
}

// TestWriteFIFOWithReader: a FIFO someone reads is refused too, and the
// reader receives nothing.
func TestWriteFIFOWithReader(t *testing.T) {
	ws, root, _ := testWorkspace(t)
	path := filepath.Join(root, "fifo")
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = callBounded(t, ws, "write", path, func() {})
	wantRefused(t, "write", path, err)
	buf := make([]byte, 16)
	if n, _ := syscall.Read(int(r.Fd()), buf); n > 0 {
		t.Fatalf("the FIFO's reader received %q", buf[:n])
	}
}

// callBounded does one read or write of path and returns its error; past
// 10s it calls unblock, waits for the call and fails the test.
func callBounded(t *testing.T, ws *workspace.Workspace, op, path string, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var err error
		if op == "read" {
			_, err = ws.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: path})
		} else {
			_, err = ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: "data\n"})
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		unblock()
		<-done
		t.Fatalf("%s %s blocked", op, path)
		return nil
	}
}

func wantRefused(t *testing.T, op, path string, err error) {
	t.Helper()
	const wantMsg = "not a regular file"
	if got := acp.ErrorCode(err); err == nil || got != acp.CodeInvalidParams || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("%s %s (-want +got):\n-code %d containing %q\n+code %d: %v", op, path, acp.CodeInvalidParams, wantMsg, got, err)
	}
}
