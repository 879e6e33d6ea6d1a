package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// MaxReadBytes bounds the content one fs/read_text_file returns. The bound
// is on what is returned, not on the file: the first lines of a huge log
// are fine, all of it is refused (ask for a range with line and limit).
// A larger answer would not fit in a peer's message limit anyway.
const MaxReadBytes = 64 << 20

// Workspace serves fs/read_text_file and fs/write_text_file confined to a
// set of root directories. Paths must be absolute; symlinks are resolved
// before the check (for a file that does not exist yet, its parent
// directory is resolved), so a link cannot lead outside the roots.
//
// Writes create a missing file (mode 0644) but not missing parent
// directories: an agent that wants a new directory runs mkdir in a
// terminal, where the user sees it.
type Workspace struct {
	roots []string // absolute, symlinks resolved
}

// NewWorkspace resolves roots, which must be existing directories.
func NewWorkspace(roots []string) (*Workspace, error) {
	if len(roots) == 0 {
		return nil, errors.New("no workspace root")
	}
	ws := &Workspace{}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("workspace root %q: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("workspace root %q: %w", r, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("workspace root %q: %w", r, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("workspace root %q is not a directory", r)
		}
		ws.roots = append(ws.roots, real)
	}
	return ws, nil
}

// Roots returns the resolved roots.
func (ws *Workspace) Roots() []string { return append([]string(nil), ws.roots...) }

func (ws *Workspace) contains(real string) bool {
	for _, r := range ws.roots {
		if within(real, r) {
			return true
		}
	}
	return false
}

// within reports whether path is root or below it; both are clean and absolute.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolve checks path and returns its real location. A missing file is
// allowed only when mayCreate; then its parent must exist.
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
	if !ws.contains(real) {
		return "", ws.outsideErr(path)
	}
	return real, nil
}

// outside tells, for a path that does not resolve, whether it is plainly
// outside the roots, so that the agent learns nothing about what exists there.
func (ws *Workspace) outside(clean string) bool {
	dir := clean
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return !ws.contains(real)
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

// ReadTextFile serves fs/read_text_file. line is 1-based (absent or 0 means
// 1); limit is a number of lines (absent means to the end, 0 means none).
// Lines keep their endings. A line past the end gives empty content.
func (ws *Workspace) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	real, err := ws.resolve(req.Path, false)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fsErr(req.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fsErr(req.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %q is not a regular file", acp.ErrInvalidParams, req.Path)
	}
	first := uint64(1)
	if req.Line != nil && *req.Line > 0 {
		first = uint64(*req.Line)
	}
	content, err := readLines(ctx, f, first, req.Limit, MaxReadBytes)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("%w: %q: the content asked for exceeds %d MiB; read it in parts with line and limit", acp.ErrInvalidParams, req.Path, MaxReadBytes>>20)
		}
		return nil, fsErr(req.Path, err)
	}
	return &acp.ReadTextFileResponse{Content: content}, nil
}

var errTooLarge = errors.New("content too large")

// readLines returns lines first, first+1, … (1-based), at most limit of
// them when limit is set, failing with errTooLarge past max bytes.
func readLines(ctx context.Context, r io.Reader, first uint64, limit *uint32, max int) (string, error) {
	if limit != nil && *limit == 0 {
		return "", nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var out strings.Builder
	lineNo := uint64(1)
	taken := uint64(0)
	for {
		if lineNo&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && lineNo >= first {
			if out.Len()+len(chunk) > max {
				return "", errTooLarge
			}
			out.Write(chunk)
		}
		switch {
		case err == nil:
			if lineNo >= first {
				taken++
				if limit != nil && taken >= uint64(*limit) {
					return out.String(), nil
				}
			}
			lineNo++
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: keep reading the same line.
		case errors.Is(err, io.EOF):
			return out.String(), nil
		default:
			return "", err
		}
	}
}

// WriteTextFile serves fs/write_text_file: it replaces the file's content,
// creating the file if missing (its parent directory must exist).
func (ws *Workspace) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	real, err := ws.resolve(req.Path, true)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(real); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %q is not a regular file", acp.ErrInvalidParams, req.Path)
	}
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fsErr(req.Path, err)
	}
	if _, err := io.WriteString(f, req.Content); err != nil {
		f.Close()
		return nil, fsErr(req.Path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fsErr(req.Path, err)
	}
	return &acp.WriteTextFileResponse{}, nil
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
