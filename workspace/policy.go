package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
)

// WritePolicy is what fs/write_text_file may change inside a Workspace's
// roots. It holds the rules the sandbox applies to the run's commands, so
// that an agent cannot have the client write for it, from outside the
// sandbox, what its commands may not. Reads are not affected: the sandbox
// confines writes, not reads.
//
// By Mode:
//   - sandbox.Off (the zero value): anything inside the roots.
//   - sandbox.ReadOnly: nothing; every write is refused.
//   - sandbox.WorkspaceWrite: anything inside the roots but git's own
//     files, unless WritableGit. Git runs what its directory holds (hooks,
//     core.fsmonitor and other commands in config) the next time the user
//     runs git there, outside any sandbox. Refused are: a path through a
//     directory named .git, at any depth; a file named .git (it would make
//     its directory a repository); a path beneath the directory that a .git
//     file (gitdir: …) or a .git symlink met on the way points to; and a
//     path through a directory that git itself would take for a repository
//     (HEAD with objects/ and refs/, or with commondir: a bare repository,
//     a separate git directory, a worktree's or submodule's). ".git" is
//     compared as git compares it on case-insensitive file systems (.GIT,
//     .Git, and the names NTFS and HFS+ take for it).
//
// The roots themselves are writable in WorkspaceWrite, as they are in the
// sandbox's Writable; its further writable paths (the caches) lie outside
// the roots and so are never written through fs.
//
// The directories are checked as the write descends to them, through the
// handles it writes with, so a directory swapped for a symlink into .git
// mid-request is refused, not followed. What no check by the client can
// stop is a directory renamed after it was checked: an agent that can
// rename its way into .git can write there itself (an unconfined one), or
// cannot (a .git the sandbox mounts read-only cannot be renamed).
type WritePolicy struct {
	// Mode is the sandbox mode of the run's commands; see above.
	Mode sandbox.Mode
	// WritableGit lets WorkspaceWrite write git's files too, as
	// sandbox.Policy.WritableGit lets the commands.
	WritableGit bool
	// WritableConfig lets WorkspaceWrite write the files that editors,
	// shells and agents run things from when they open the workspace
	// (sandbox.ProtectedNames: .vscode, .claude, .mcp.json, .bashrc, …),
	// as sandbox.Policy.WritableConfig lets the commands. Without it a
	// path with such a name among its components, at any depth and in any
	// case, is refused.
	WritableConfig bool
}

// guardsConfig tells whether writes must keep out of the files programs
// run things from.
func (p WritePolicy) guardsConfig() bool {
	return p.Mode == sandbox.WorkspaceWrite && !p.WritableConfig
}

func configRefusal(path, name string) error {
	return fmt.Errorf("%w: %q: not written: editors, shells or agents run what %s holds when they start or open the workspace, outside the sandbox (--writable-config allows it)",
		acp.ErrPermissionDenied, path, name)
}

// protectedIn returns the first component of rel that is one of
// sandbox.ProtectedNames, in any case, or "".
func protectedIn(rel string) string {
	for c := range strings.SplitSeq(rel, string(filepath.Separator)) {
		if sandbox.IsProtectedName(c) {
			return c
		}
	}
	return ""
}

// guardsGit tells whether writes must keep out of git's files.
func (p WritePolicy) guardsGit() bool {
	return p.Mode == sandbox.WorkspaceWrite && !p.WritableGit
}

// maxGitFile bounds what is read of a .git file. Git itself refuses one
// larger than 4×PATH_MAX (16 KiB on Linux); a larger one is taken as
// hostile and the write beneath it refused, since another tool may read it.
const maxGitFile = 16 << 10

// gitRefusal is a write the policy keeps out of git's files.
func gitRefusal(path, why string) error {
	return fmt.Errorf("%w: %q: not written: %s; git would run what is written there, outside the sandbox (--writable-git allows it)",
		acp.ErrPermissionDenied, path, why)
}

func readOnlyRefusal(path string) error {
	return fmt.Errorf("%w: %q: not written: the sandbox is read-only", acp.ErrPermissionDenied, path)
}

// changedErr is a directory on the way to the file that changed between
// the resolve and the walk (turned into a symlink, or swapped for another).
func changedErr(path string) error {
	return fmt.Errorf("%w: %q: a directory on its way changed during the write", acp.ErrInvalidParams, path)
}

// dotGitIn returns the first component of p (split at the separator)
// that isDotGit, or "".
func dotGitIn(p string) string {
	for c := range strings.SplitSeq(p, string(filepath.Separator)) {
		if isDotGit(c) {
			return c
		}
	}
	return ""
}

// isDotGit reports whether a file system may take name for ".git": in any
// case (ext4 with casefold, vfat, NTFS, APFS and HFS+ ignore it), with the
// code points HFS+ ignores in names, with the trailing dots and spaces and
// the ":stream" suffix NTFS drops, or as NTFS's short name GIT~1. Names
// that only look alike on another system are refused too: a file there
// called ".git." is not worth the doubt.
func isDotGit(name string) bool {
	if len(name) < 4 || len(name) > 1024 {
		return false // NAME_MAX is 255 bytes; each ignorable is 3
	}
	var b strings.Builder
	for _, r := range name {
		if !hfsIgnorable(r) {
			b.WriteRune(r)
		}
	}
	n, _, _ := strings.Cut(b.String(), ":")
	n = strings.TrimRight(n, ". ")
	return strings.EqualFold(n, ".git") || strings.EqualFold(n, "git~1")
}

// hfsIgnorable reports the code points HFS+ leaves out when it compares
// names (joiners, directional marks, the byte-order mark).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// gitdirTargets returns the paths that the content of a .git file names as
// the git directory, as given (relative ones are relative to the file's
// directory). Git takes "gitdir: " and the rest of the file, less the line
// endings at its end; other tools take the first line, match the prefix in
// any case and trim the spaces around the path. Every reading that some
// tool may act on is returned, once; content that names no path gives
// none.
func gitdirTargets(b []byte) []string {
	var out []string
	add := func(p string) {
		if p != "" && !strings.ContainsRune(p, 0) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	s := string(b)
	if rest, ok := strings.CutPrefix(s, "gitdir: "); ok {
		add(strings.TrimRight(rest, "\r\n"))
	}
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
	const prefix = "gitdir:"
	if len(line) >= len(prefix) && strings.EqualFold(line[:len(prefix)], prefix) {
		add(strings.TrimSpace(line[len(prefix):]))
	}
	return out
}

// gitWalk is one write's walk from a root to the directory it writes in,
// under a policy that guards git's files.
type gitWalk struct {
	path string // the request's, for the errors
	// onWay holds the directories from / to where the walk is; gitDirs
	// the git directories learnt on the way, each with the .git that named
	// it. A directory in both is refused.
	onWay, gitDirs idSet
}

// writeDir opens, for a write of rel in root i (as resolve gave it), the
// directory the file is to be written in, and returns the file's name in
// it. Under a policy that guards git's files it descends one component at
// a time through the *os.Root handles, checking each directory it has
// opened (not a name that may change after the check): see WritePolicy.
func (ws *Workspace) writeDir(i int, rel, path string) (*os.Root, string, error) {
	root := ws.dirs[i]
	name := filepath.Base(rel)
	if ws.policy.guardsConfig() {
		// Where the write lands (resolve followed the links), and the
		// path as the request wrote it.
		if c := protectedIn(rel); c != "" {
			return nil, "", configRefusal(path, c)
		}
		if r, err := filepath.Rel(ws.roots[i], filepath.Clean(path)); err == nil {
			if c := protectedIn(r); c != "" {
				return nil, "", configRefusal(path, c)
			}
		}
	}
	if !ws.policy.guardsGit() {
		dir, err := root.OpenRoot(filepath.Dir(rel))
		return dir, name, err
	}
	clean := filepath.Clean(path)
	if isDotGit(name) || isDotGit(filepath.Base(clean)) {
		return nil, "", gitRefusal(path, fmt.Sprintf("a file named %q makes its directory a git repository", filepath.Base(clean)))
	}
	// The request's path as written, since resolve followed its links
	// (WS/sub/.git a symlink to elsewhere), then the root's.
	if c := dotGitIn(filepath.Dir(clean)); c != "" {
		return nil, "", gitRefusal(path, fmt.Sprintf("it is inside %q", c))
	}
	if c := dotGitIn(ws.roots[i]); c != "" {
		return nil, "", gitRefusal(path, fmt.Sprintf("the workspace root %q is inside %q", ws.roots[i], c))
	}
	w := &gitWalk{path: path}
	for _, fi := range ws.above[i] {
		w.onWay.add(fi, "")
	}
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, "", err
	}
	dirPath := ws.roots[i]
	fi, err := cur.Stat(".")
	if err == nil {
		err = w.enter(cur, dirPath, fi)
	}
	var comps []string
	if d := filepath.Dir(rel); d != "." {
		comps = strings.Split(d, string(filepath.Separator))
	}
	for _, c := range comps {
		if err != nil {
			break
		}
		var next *os.Root
		next, fi, err = w.step(cur, c)
		cur.Close()
		cur = next
		if err == nil {
			dirPath = filepath.Join(dirPath, c)
			err = w.enter(cur, dirPath, fi)
		}
	}
	if err != nil {
		if cur != nil {
			cur.Close()
		}
		return nil, "", err
	}
	return cur, name, nil
}

// step opens the directory c in cur without following a symlink, and
// returns it with its stat: the entry is looked at, then opened, and what
// was opened must be what was looked at (a directory cannot be hard-linked,
// so it is that entry).
func (w *gitWalk) step(cur *os.Root, c string) (*os.Root, fs.FileInfo, error) {
	if isDotGit(c) {
		return nil, nil, gitRefusal(w.path, fmt.Sprintf("it is inside %q", c))
	}
	lfi, err := cur.Lstat(c)
	switch {
	case err != nil:
		return nil, nil, err
	case lfi.Mode()&fs.ModeSymlink != 0:
		// resolve gave a path without symlinks: this one is new.
		return nil, nil, changedErr(w.path)
	case !lfi.IsDir():
		return nil, nil, &os.PathError{Op: "open", Path: c, Err: syscall.ENOTDIR}
	}
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, nil, err
	}
	nfi, err := next.Stat(".")
	if err != nil || !os.SameFile(lfi, nfi) {
		next.Close()
		return nil, nil, changedErr(w.path)
	}
	return next, nfi, nil
}

// enter checks the directory dir (opened, at dirPath, fi its stat) that
// the walk has reached: it must not be a git directory, by its content or
// because a .git met on the way named it; and its own .git may name one.
func (w *gitWalk) enter(dir *os.Root, dirPath string, fi fs.FileInfo) error {
	if src, ok := w.gitDirs.find(fi); ok {
		return gitRefusal(w.path, fmt.Sprintf("it is in the git directory that %q names", src))
	}
	w.onWay.add(fi, "")
	if looksLikeGitDir(dir) {
		return gitRefusal(w.path, fmt.Sprintf("%q is a git directory", dirPath))
	}
	src := filepath.Join(dirPath, ".git")
	named, err := gitLinks(dir, dirPath)
	if err != nil {
		return gitRefusal(w.path, fmt.Sprintf("%q cannot be read as git would (%v)", src, err))
	}
	for _, g := range named {
		if _, ok := w.onWay.find(g); ok {
			return gitRefusal(w.path, fmt.Sprintf("it is in the git directory that %q names", src))
		}
		w.gitDirs.add(g, src)
	}
	return nil
}

// looksLikeGitDir applies git's own test of a repository directory: HEAD,
// and objects/ with refs/, or a commondir file (a linked worktree's).
func looksLikeGitDir(dir *os.Root) bool {
	if _, err := dir.Lstat("HEAD"); err != nil {
		return false
	}
	if _, err := dir.Lstat("commondir"); err == nil {
		return true
	}
	_, oerr := dir.Lstat("objects")
	_, rerr := dir.Lstat("refs")
	return oerr == nil && rerr == nil
}

var errGitFileTooLarge = fmt.Errorf("larger than %d KiB", maxGitFile>>10)

// gitLinks returns the directories that the .git in dir (at dirPath)
// makes git use: itself if it is a directory, the target of a symlink to
// one, the gitdir of a .git file (or of a symlink to one) that exists. A
// FIFO, socket or device named .git is neither opened nor counted (git
// ignores it); an unreadable or oversized .git file is an error.
func gitLinks(dir *os.Root, dirPath string) ([]fs.FileInfo, error) {
	lfi, err := dir.Lstat(".git")
	if err != nil {
		return nil, nil
	}
	var f *os.File
	switch {
	case lfi.IsDir():
		return []fs.FileInfo{lfi}, nil
	case lfi.Mode().IsRegular():
		f, err = openRegular(dir, ".git", os.O_RDONLY)
	case lfi.Mode()&fs.ModeSymlink != 0:
		// Git follows it wherever it leads, so it is followed by name
		// here, out of the roots too: only to learn where it leads.
		name := filepath.Join(dirPath, ".git")
		st, serr := os.Stat(name)
		switch {
		case serr != nil:
			return nil, nil // dangling: git finds no repository
		case st.IsDir():
			return []fs.FileInfo{st}, nil
		case !st.Mode().IsRegular():
			return nil, nil
		}
		f, err = openRegularPath(name)
	default:
		return nil, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFile+1))
	f.Close()
	switch {
	case err != nil:
		return nil, err
	case len(b) > maxGitFile:
		return nil, errGitFileTooLarge
	}
	var out []fs.FileInfo
	for _, g := range gitdirTargets(b) {
		if !filepath.IsAbs(g) {
			// As git joins them: the path as written, not cleaned, so
			// that ".." is resolved by the kernel after any symlink.
			g = dirPath + string(filepath.Separator) + g
		}
		if st, err := os.Stat(g); err == nil && st.IsDir() {
			out = append(out, st)
		}
	}
	return out, nil
}

// openRegularPath opens name, found outside any root, for reading, never
// blocking and only if it is a regular file.
func openRegularPath(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|openNoBlock, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &notRegularError{fi.Mode()}
		}
		return nil, err
	}
	return f, nil
}

// idSet is a set of files by identity (device and inode where the system
// has them), each with a note.
type idSet struct {
	keys  map[fileKey]string
	other []idNote // files without a key, compared with os.SameFile
}

type idNote struct {
	fi   fs.FileInfo
	note string
}

func (s *idSet) add(fi fs.FileInfo, note string) {
	if k, ok := keyOf(fi); ok {
		if s.keys == nil {
			s.keys = map[fileKey]string{}
		}
		if _, dup := s.keys[k]; !dup {
			s.keys[k] = note
		}
		return
	}
	s.other = append(s.other, idNote{fi, note})
}

func (s *idSet) find(fi fs.FileInfo) (string, bool) {
	if k, ok := keyOf(fi); ok {
		note, found := s.keys[k]
		return note, found
	}
	for _, o := range s.other {
		if os.SameFile(o.fi, fi) {
			return o.note, true
		}
	}
	return "", false
}

// ancestors returns the directories above real (clean, absolute), from
// the top, as far as they can be looked at.
func ancestors(real string) []fs.FileInfo {
	var out []fs.FileInfo
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			out = append(out, fi)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(out)
	return out
}
