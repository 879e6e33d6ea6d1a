package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/pathutil"
	"github.com/acpterm/acpterm/sandbox"
)

// Workspace serves fs/read_text_file and fs/write_text_file confined to a
// set of root directories. Paths must be absolute.
//
// Confinement is the kernel's: each root is opened once as an *os.Root and
// every open goes through it (openat beneath the root's descriptor, one
// component at a time, refusing any step that leaves it). A directory
// swapped for a symlink between a check and the open therefore cannot
// redirect the I/O outside. Before that, the path is resolved by name
// (symlinks followed; for a file that does not exist yet, its parent
// directory) only to pick the root and to give clear errors: an absolute
// symlink that stays inside, which os.Root alone would refuse, keeps
// working, and a link leading out is reported as outside the workspace.
//
// Only regular files are read or written: a FIFO, device, socket or
// directory is refused without blocking (the open is non-blocking and the
// opened file is checked before any I/O).
//
// Writes create a missing file (mode 0644) but not missing parent
// directories: an agent that wants a new directory runs mkdir in a
// terminal, where the user sees it. A write replaces the file by rename
// (see replaceFile), so a failed one leaves the old content whole. Writes
// also obey the Workspace's WritePolicy, the sandbox of the run's
// commands: none in read-only, none into git's files in workspace-write.
type Workspace struct {
	roots  []string        // absolute, symlinks resolved
	dirs   []*os.Root      // dirs[i] is roots[i], open until Close
	above  [][]fs.FileInfo // above[i]: the directories above roots[i]
	policy WritePolicy
	// hidden and shown are what Hide set: real paths.
	hidden, shown []string

	closeOnce sync.Once
	closeErr  error
}

// NewWorkspace resolves and opens roots, which must be existing
// directories, for fs requests whose writes obey p (nil: sandbox.Off,
// anything inside the roots). The caller closes the Workspace.
func NewWorkspace(roots []string, p *WritePolicy) (*Workspace, error) {
	if len(roots) == 0 {
		return nil, errors.New("no workspace root")
	}
	ws := &Workspace{}
	if p != nil {
		switch p.Mode {
		case sandbox.Off, sandbox.ReadOnly, sandbox.WorkspaceWrite:
		default:
			return nil, fmt.Errorf("write policy: unknown sandbox mode %v", p.Mode)
		}
		ws.policy = *p
	}
	for _, r := range roots {
		real, dir, err := openRoot(r)
		if err != nil {
			ws.Close()
			return nil, fmt.Errorf("workspace root %q: %w", r, err)
		}
		ws.roots = append(ws.roots, real)
		ws.dirs = append(ws.dirs, dir)
		ws.above = append(ws.above, ancestors(real))
	}
	return ws, nil
}

func openRoot(r string) (string, *os.Root, error) {
	abs, err := filepath.Abs(r)
	if err != nil {
		return "", nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.OpenRoot(real)
	if err != nil {
		return "", nil, err
	}
	// The root may have been replaced since EvalSymlinks; what counts is
	// the directory actually opened.
	fi, err := dir.Stat(".")
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		dir.Close()
		return "", nil, err
	}
	return real, dir, nil
}

// Close closes the roots. It is idempotent; requests after Close fail.
func (ws *Workspace) Close() error {
	ws.closeOnce.Do(func() {
		var errs []error
		for _, d := range ws.dirs {
			errs = append(errs, d.Close())
		}
		ws.closeErr = errors.Join(errs...)
	})
	return ws.closeErr
}

// Roots returns the resolved roots.
func (ws *Workspace) Roots() []string { return append([]string(nil), ws.roots...) }

// Contains reports whether real lies in one of the roots: real must be
// clean, absolute and already resolved (filepath.EvalSymlinks), since the
// check is lexical.
func (ws *Workspace) Contains(real string) bool {
	_, _, ok := ws.rootOf(real)
	return ok
}

// rootOf returns the first root holding real (clean and absolute) and the
// path relative to it.
func (ws *Workspace) rootOf(real string) (*os.Root, string, bool) {
	i, rel, ok := ws.rootIndex(real)
	if !ok {
		return nil, "", false
	}
	return ws.dirs[i], rel, true
}

// rootIndex is rootOf with the root's index.
func (ws *Workspace) rootIndex(real string) (int, string, bool) {
	for i, r := range ws.roots {
		if rel, ok := pathutil.Rel(real, r); ok {
			return i, rel, true
		}
	}
	return 0, "", false
}

// resolve checks path and returns its real location. A missing file is
// allowed only when mayCreate; then its parent must exist. The answer is
// advisory (the file system may change right after): it picks the root and
// shapes the errors, and os.Root enforces the confinement.
func (ws *Workspace) resolve(path string, mayCreate bool) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: path is empty", acp.ErrInvalidParams)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: path %q is not absolute", acp.ErrInvalidParams, path)
	}
	clean := filepath.Clean(path)
	real, err := filepath.EvalSymlinks(clean)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && mayCreate:
		// The parent must exist; the file itself is created there. A
		// dangling symlink as the name would make the write land wherever
		// it points, so it is refused.
		if _, lerr := os.Lstat(clean); lerr == nil {
			return "", fmt.Errorf("%w: %q is a symlink to a missing file", acp.ErrInvalidParams, path)
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(clean))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("%w: directory %q does not exist (acpterm creates files, not directories)", acp.ErrInvalidParams, filepath.Dir(clean))
			}
			return "", fmt.Errorf("%w: %q: %v", acp.ErrInvalidParams, filepath.Dir(clean), err)
		}
		real = filepath.Join(dir, filepath.Base(clean))
	case errors.Is(err, os.ErrNotExist):
		if ws.outside(clean) {
			return "", ws.outsideErr(path)
		}
		return "", fmt.Errorf("%w: file %q not found", acp.ErrResourceNotFound, path)
	default:
		return "", fmt.Errorf("%w: %q: %v", acp.ErrInvalidParams, path, err)
	}
	if !ws.Contains(real) {
		return "", ws.outsideErr(path)
	}
	if ws.hides(real) {
		return "", hiddenRefusal(path)
	}
	return real, nil
}

// outside tells, for a path that does not resolve, whether it is plainly
// outside the roots, so that the agent learns nothing about what exists there.
func (ws *Workspace) outside(clean string) bool {
	dir := clean
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return !ws.Contains(real)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

func (ws *Workspace) outsideErr(path string) error {
	return fmt.Errorf("%w: path %q is outside the workspace (roots: %s)", acp.ErrInvalidParams, path, strings.Join(ws.roots, ", "))
}

// open resolves path and opens it through its root with flag, refusing
// anything but a regular file.
func (ws *Workspace) open(path string, flag int) (*os.File, error) {
	real, err := ws.resolve(path, flag&os.O_CREATE != 0)
	if err != nil {
		return nil, err
	}
	root, rel, ok := ws.rootOf(real)
	if !ok { // resolve checked it; kept for safety if that ever changes
		return nil, ws.outsideErr(path)
	}
	f, err := openRegular(root, rel, flag)
	if err != nil {
		return nil, ws.openErr(path, err)
	}
	// The name was checked; a directory on its way may have been swapped
	// for a link since. What was opened is checked too, where the system
	// says (Linux: /proc/self/fd).
	if opened, ok := openedPath(f); ok && ws.hides(opened) {
		f.Close()
		return nil, hiddenRefusal(path)
	}
	return f, nil
}

// notRegularError refuses a file that is not a regular one.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string { return "not a regular file (" + fileKind(e.mode) + ")" }

func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "mode " + m.String()
}

// openRegular opens rel in root with flag and returns it only if it is a
// regular file. It never blocks on a FIFO or device and never does I/O on
// one.
func openRegular(root *os.Root, rel string, flag int) (*os.File, error) {
	// A stat first, so that a device or FIFO is normally refused without
	// being opened at all (opening a device can have effects of its own).
	// It is racy: the check that counts is the fstat of the opened file.
	fi, err := root.Stat(rel)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return nil, &notRegularError{fi.Mode()}
	case err != nil && !(errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0):
		return nil, err
	}
	// Non-blocking so that a FIFO swapped in since the stat cannot hang the
	// open (a FIFO with no writer blocks a read open; with no reader a
	// write open fails with ENXIO); no controlling terminal from a tty.
	// No O_TRUNC: a non-regular file must not be touched before the fstat.
	f, err := root.OpenFile(rel, flag&^os.O_TRUNC|openNoBlock, 0o644)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err == nil && !fi.Mode().IsRegular() {
		err = &notRegularError{fi.Mode()}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openErr maps a failure to open a path that resolved inside the roots.
func (ws *Workspace) openErr(path string, err error) error {
	var nr *notRegularError
	var errno syscall.Errno
	var ae *acp.Error
	switch {
	case errors.As(err, &ae):
		return err // already the answer (a refusal by the write policy)
	case errors.As(err, &nr):
		return fmt.Errorf("%w: %q is %v", acp.ErrInvalidParams, path, nr)
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%w: %q: the workspace is closed", acp.ErrInternal, path)
	case isNoDevice(err):
		// open(2) of a socket, or of a FIFO for writing with no reader.
		return fmt.Errorf("%w: %q is not a regular file", acp.ErrInvalidParams, path)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		// A component changed under us (a directory turned into a file or
		// a symlink mid-walk), or links loop: the request's fault, not ours.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the request's path, not the relative one
		}
		return fmt.Errorf("%w: %q: %v", acp.ErrInvalidParams, path, err)
	case !errors.As(err, &errno):
		// Not a system error: os.Root refused a step out of the root (a
		// symlink that leads outside, or an absolute one, appeared after
		// the path was resolved).
		return ws.outsideErr(path)
	}
	return fsErr(path, err)
}

func fsErr(path string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: file %q not found", acp.ErrResourceNotFound, path)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: %q: permission denied", acp.ErrInvalidParams, path)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%w: %q: %v", acp.ErrInternal, path, err)
}
