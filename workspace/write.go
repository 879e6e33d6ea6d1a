package workspace

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
)

// WriteTextFile serves fs/write_text_file: it replaces the file's content,
// creating the file if missing (its parent directory must exist), where
// the Workspace's WritePolicy allows it. A refusal by the policy is an
// acp.ErrPermissionDenied error saying why.
func (ws *Workspace) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	if ws.policy.Mode == sandbox.ReadOnly {
		// Before anything is looked at: the answer is the same for any path.
		return nil, readOnlyRefusal(req.Path)
	}
	real, err := ws.resolve(req.Path, true)
	if err != nil {
		return nil, err
	}
	i, rel, ok := ws.rootIndex(real)
	if !ok { // resolve checked it; kept for safety if that ever changes
		return nil, ws.outsideErr(req.Path)
	}
	dir, name, err := ws.writeDir(i, rel, req.Path)
	if err == nil {
		err = replaceFile(dir, name, req.Content)
		dir.Close()
	}
	if err != nil {
		return nil, ws.openErr(req.Path, err)
	}
	return &acp.WriteTextFileResponse{}, nil
}

// replaceFile gives name in dir the content by writing it to a new file in
// the same directory and renaming that over name. Written in place, a write
// failing midway (a full disk) would leave the file truncated or half
// written, and a hard link to a file outside the roots would carry the
// write there; replaced, the old file stays whole until the new one is
// complete, and only the name inside the root changes. The replaced file's
// permissions are kept, and its owner where the system allows it. There is
// no fsync: the guarantee is against a failing write, not a power cut.
//
// The directory is opened once, beneath the root (Workspace.writeDir),
// and the temporary file is created, renamed and removed in it by name, so
// a directory swapped in between cannot move any of it elsewhere. A
// symlink at name is replaced, not followed (resolve already followed the
// links it found).
func replaceFile(dir *os.Root, name, content string) error {
	old, err := dir.Lstat(name)
	switch {
	case err == nil && !old.Mode().IsRegular():
		return &notRegularError{old.Mode()}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil:
		old = nil
	}
	tmp, f, err := createTemp(dir, old == nil)
	if err != nil {
		return err
	}
	err = writeAll(f, content, old)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
	}
	return err
}

// createTemp makes a new file in dir, named with 128 random bits so that
// no one can have made it first (and O_EXCL refuses whatever is there,
// a symlink included). A new file (fresh) gets mode 0644 less the umask,
// as if created in place; one that is to replace another stays private
// until writeAll sets its mode.
func createTemp(dir *os.Root, fresh bool) (string, *os.File, error) {
	perm := fs.FileMode(0o600)
	if fresh {
		perm = 0o644
	}
	name := ".acpterm-" + rand.Text() + ".tmp"
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	return name, f, err
}

// writeAll writes content to f and, when f replaces old, gives it old's
// owner (where allowed) and permissions.
func writeAll(f *os.File, content string, old fs.FileInfo) error {
	if _, err := io.WriteString(f, content); err != nil {
		return err
	}
	if old == nil {
		return nil
	}
	keepOwner(f, old) // before Chmod: a chown may clear mode bits
	return f.Chmod(old.Mode().Perm())
}
