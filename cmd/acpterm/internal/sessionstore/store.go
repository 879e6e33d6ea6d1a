// Package sessionstore remembers the ACP sessions acpterm opened, so that
// `acpterm run --resume` can continue the last one of an agent in a
// directory and `acpterm sessions` can list them.
//
// The store is one JSON file in the user's state directory (StateDir),
// bounded to Store.Max entries. Every change takes a lock on a file beside
// it, reads the file again, merges, and replaces it with a temporary file
// renamed over it, so two acpterm processes that write at once both keep
// their entries and a reader never sees half a file. A file that is not a
// store (corrupt, truncated, from a future version) is set aside as
// FILE.corrupt with a warning, and the store starts afresh.
package sessionstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// DefaultMax is the number of entries a store keeps when Store.Max is 0:
// the most recently updated ones.
const DefaultMax = 200

// maxFileSize bounds what is read of the file: DefaultMax entries take a
// small fraction of it; a larger file is not ours.
const maxFileSize = 8 << 20

// titleMax bounds an entry's title, in bytes.
const titleMax = 80

// sessionIDMax bounds an entry's session ID, which the agent chose: IDs
// are UUIDs and the like; DefaultMax entries with one of any length could
// make the file too large to read.
const sessionIDMax = 1 << 10

// Entry is one remembered session.
type Entry struct {
	SessionID string `json:"sessionId"`
	// Agent is the agent's name when it was started by one (acpterm
	// agents), else "".
	Agent string `json:"agent,omitempty"`
	// Command is the agent's command line.
	Command []string `json:"command"`
	// Target is where the session's terminals ran when not on this
	// machine: acpterm run --remote's target without its directory
	// (ssh://devbox); "" for this machine. Cwd is a path there.
	Target string `json:"target,omitempty"`
	// Cwd is the session's working directory, absolute.
	Cwd string `json:"cwd"`
	// Title is the first line of the session's first prompt, sanitized
	// and clipped (Title).
	Title   string    `json:"title,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Same reports whether e is a session in cwd on target ("" for this
// machine) of the agent called agent or, when agent is "", of the agent
// command (the same command line). A name is the better key: what it
// starts may change (npx, then an installed program). The same path on
// two machines is two places.
func (e *Entry) Same(agent string, command []string, target, cwd string) bool {
	if e.Cwd != cwd || e.Target != target {
		return false
	}
	if agent != "" {
		return e.Agent == agent
	}
	return e.Agent == "" && slices.Equal(e.Command, command)
}

// file is the store on disk.
type file struct {
	Version  int     `json:"version"`
	Sessions []Entry `json:"sessions"`
}

const fileVersion = 1

// Store is a session store at Path. Its zero Max means DefaultMax. Warn,
// when set, hears of a corrupt file that was set aside.
type Store struct {
	Path string
	Max  int
	Warn func(msg string)
	// LockWait bounds the wait for another process's lock (0: 5 s); past
	// it the change is made without the lock, and only the re-read before
	// the rename protects the other writer's entries.
	LockWait time.Duration
}

// Open returns the store in the user's state directory.
func Open() (*Store, error) {
	dir, err := StateDir()
	if err != nil {
		return nil, err
	}
	return &Store{Path: filepath.Join(dir, "sessions.json")}, nil
}

func (s *Store) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMax
}

func (s *Store) warn(format string, args ...any) {
	if s.Warn != nil {
		s.Warn(fmt.Sprintf(format, args...))
	}
}

// List returns every entry, the most recently updated first. A missing
// file is an empty store.
func (s *Store) List() ([]Entry, error) {
	f, err := s.read(false)
	if err != nil {
		return nil, err
	}
	return f.Sessions, nil
}

// Last returns the most recently updated session in cwd on target ("" for
// this machine) of the agent called agent, or of command when agent is ""
// (Entry.Same).
func (s *Store) Last(agent string, command []string, target, cwd string) (Entry, bool, error) {
	list, err := s.List()
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range list {
		if e.Same(agent, command, target, cwd) {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Record adds e, or updates the entry with the same session ID, cwd and
// agent (Entry.Same): Updated is taken from e, while the first Created and
// the first non-empty Title are kept. The oldest entries past Max are
// dropped.
func (s *Store) Record(e Entry) error {
	if e.SessionID == "" {
		return errors.New("sessionstore: an entry without a session ID")
	}
	if len(e.SessionID) > sessionIDMax {
		return fmt.Errorf("sessionstore: the session ID is longer than %d bytes", sessionIDMax)
	}
	e.Title = Title(e.Title)
	if e.Created.IsZero() {
		e.Created = e.Updated
	}
	return s.update(func(f *file) {
		for i := range f.Sessions {
			old := &f.Sessions[i]
			if old.SessionID != e.SessionID || !old.Same(e.Agent, e.Command, e.Target, e.Cwd) {
				continue
			}
			if !old.Created.IsZero() && old.Created.Before(e.Created) {
				e.Created = old.Created
			}
			if old.Title != "" {
				e.Title = old.Title
			}
			f.Sessions = slices.Delete(f.Sessions, i, i+1)
			break
		}
		f.Sessions = append(f.Sessions, e)
	})
}

// update changes the store under its lock: read, change, sort, bound,
// write.
func (s *Store) update(change func(*file)) error {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sessionstore: %w", err)
	}
	unlock, err := lockFile(s.Path+".lock", s.lockWait())
	if err != nil {
		// Another process holds the lock for too long (or locks do not
		// work here): the change is still made, re-reading just before
		// the write.
		s.warn("the session store is locked by another process (%v); writing without the lock", err)
		unlock = func() {}
	}
	defer unlock()
	f, err := s.read(true)
	if err != nil {
		return err
	}
	change(&f)
	sortNewest(f.Sessions)
	if len(f.Sessions) > s.max() {
		f.Sessions = f.Sessions[:s.max()]
	}
	return s.write(&f)
}

func (s *Store) lockWait() time.Duration {
	if s.LockWait > 0 {
		return s.LockWait
	}
	return 5 * time.Second
}

// read reads the file. A missing one is empty; a corrupt or oversized one
// is empty too, with a warning, and with setAside (update does it, under
// the lock) it is renamed to FILE.corrupt (replacing an older one). A
// reader without the lock leaves it where it is: between its read and a
// rename, another process could have set the file aside and written a
// good one, which the rename would then take.
func (s *Store) read(setAside bool) (file, error) {
	b, err := readBounded(s.Path)
	var perr error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return file{Version: fileVersion}, nil
	case errors.Is(err, errTooLarge):
		perr = err
	case err != nil:
		return file{}, fmt.Errorf("sessionstore: %w", err)
	}
	var f file
	if perr == nil {
		f, perr = parse(b)
	}
	if perr != nil && !setAside {
		s.warn("the session store %s is unreadable (%v); ignoring it until the next session is recorded", s.Path, perr)
		return file{Version: fileVersion}, nil
	}
	if perr != nil {
		bad := s.Path + ".corrupt"
		if rerr := os.Rename(s.Path, bad); rerr != nil {
			s.warn("the session store %s is unreadable (%v); starting afresh", s.Path, perr)
		} else {
			s.warn("the session store %s is unreadable (%v); moved it to %s and started afresh", s.Path, perr, bad)
		}
		return file{Version: fileVersion}, nil
	}
	return f, nil
}

// errTooLarge is readBounded's error for a file over maxFileSize.
var errTooLarge = fmt.Errorf("it is larger than %d bytes", maxFileSize)

// readBounded reads the file at path, a regular one (a FIFO, a device or
// a directory is an error at once) of at most maxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, errTooLarge
	}
	return b, nil
}

// parse decodes a store file and drops the entries that make no sense
// (no session ID, no command, a relative cwd), which a hand edit or
// another version may have left. It never fails on content that is
// valid JSON of the right shape.
func parse(b []byte) (file, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return file{}, err
	}
	if f.Version > fileVersion {
		return file{}, fmt.Errorf("version %d is newer than this acpterm's %d", f.Version, fileVersion)
	}
	f.Version = fileVersion
	kept := f.Sessions[:0]
	for _, e := range f.Sessions {
		// A target's path is absolute there, which is not always
		// filepath.IsAbs here (Windows).
		abs := filepath.IsAbs(e.Cwd) || e.Target != "" && strings.HasPrefix(e.Cwd, "/")
		if e.SessionID == "" || len(e.Command) == 0 || !abs {
			continue
		}
		e.Title = Title(e.Title)
		kept = append(kept, e)
	}
	f.Sessions = kept
	sortNewest(f.Sessions)
	return f, nil
}

func sortNewest(list []Entry) {
	slices.SortStableFunc(list, func(a, b Entry) int { return b.Updated.Compare(a.Updated) })
}

// write replaces the file with f, atomically: a temporary file in the
// same directory, synced, then renamed over it.
func (s *Store) write(f *file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("sessionstore: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), filepath.Base(s.Path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("sessionstore: %w", err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, s.Path)
	}
	if werr != nil {
		_ = os.Remove(name)
		return fmt.Errorf("sessionstore: %w", werr)
	}
	return nil
}

// Title is what an entry keeps of a prompt: its first non-blank line,
// with control and format characters (escape sequences, bidi overrides)
// dropped, spaces collapsed, clipped to 80 bytes at a character start. Title(Title(s)) == Title(s).
func Title(prompt string) string {
	prompt = strings.ToValidUTF8(prompt, "")
	for line := range strings.Lines(prompt) {
		var b strings.Builder
		space := false
		for _, r := range line {
			switch {
			case unicode.IsSpace(r):
				space = b.Len() > 0
				continue
			case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
				continue
			}
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(r)
			if b.Len() > titleMax {
				break
			}
		}
		if t := b.String(); t != "" {
			return clip(t, titleMax)
		}
	}
	return ""
}

// clip cuts s to at most n bytes, the ellipsis included, at a character
// start.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return utf8cut.Head(s, n-len("…")) + "…"
}
