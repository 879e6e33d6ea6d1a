package sessionstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox"
)

func newStore(t *testing.T) (*Store, *[]string) {
	t.Helper()
	var warnings []string
	var mu sync.Mutex
	s := &Store{Path: filepath.Join(t.TempDir(), "state", "sessions.json"), Warn: func(m string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, m)
	}}
	return s, &warnings
}

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

func entry(id string, minute int) Entry {
	return Entry{SessionID: id, Command: []string{"agent", "--acp"}, Cwd: "/work", Title: "prompt " + id,
		Updated: t0.Add(time.Duration(minute) * time.Minute)}
}

func ids(list []Entry) string {
	var s []string
	for _, e := range list {
		s = append(s, e.SessionID)
	}
	return strings.Join(s, ",")
}

func TestRecordAndLast(t *testing.T) {
	s, warnings := newStore(t)
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v, %v", list, err)
	}
	recordAndMerge(t, s)
	lastByCommand(t, s)
	lastByName(t, s)
	lastOnTarget(t, s)
	if list, _ := s.List(); len(list) != 5 {
		t.Fatalf("%d sessions after one on a target, want 5: %+v", len(list), list)
	}
	if len(*warnings) != 0 {
		t.Fatalf("warnings: %q", *warnings)
	}
	if fi, err := os.Stat(s.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	if err := s.Record(Entry{Command: []string{"x"}, Cwd: "/"}); err == nil {
		t.Fatal("an entry without a session ID was recorded")
	}
}

func record(t *testing.T, s *Store, entries ...Entry) {
	t.Helper()
	for _, e := range entries {
		if err := s.Record(e); err != nil {
			t.Fatal(err)
		}
	}
}

// recordAndMerge records a, b, c and a again, later, with another title:
// the list is newest first, and a keeps its first title and creation.
func recordAndMerge(t *testing.T, s *Store) {
	t.Helper()
	record(t, s, entry("a", 1), entry("b", 2), Entry{SessionID: "c", Command: []string{"other"}, Cwd: "/work", Updated: t0.Add(3 * time.Minute)})
	again := entry("a", 4)
	again.Title = "second prompt"
	record(t, s, again)
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "a,c,b" {
		t.Fatalf("order %s, want a,c,b", got)
	}
	if list[0].Title != "prompt a" || !list[0].Created.Equal(t0.Add(time.Minute)) || !list[0].Updated.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("merged entry %+v", list[0])
	}
}

// lastByCommand: Last matches the command line and the directory.
func lastByCommand(t *testing.T, s *Store) {
	t.Helper()
	last, ok, err := s.Last("", []string{"agent", "--acp"}, "", "/work")
	if err != nil || !ok || last.SessionID != "a" {
		t.Fatalf("Last = %+v, %v, %v", last, ok, err)
	}
	if _, ok, _ := s.Last("", []string{"agent"}, "", "/work"); ok {
		t.Fatal("Last matched another command line")
	}
	if _, ok, _ := s.Last("", []string{"agent", "--acp"}, "", "/elsewhere"); ok {
		t.Fatal("Last matched another directory")
	}
}

// lastByName: by name, whatever command line the name started; a named
// session is not found by command line.
func lastByName(t *testing.T, s *Store) {
	t.Helper()
	named := entry("n", 5)
	named.Agent, named.Command = "codex", []string{"npx", "codex-acp"}
	record(t, s, named)
	if e, ok, _ := s.Last("codex", []string{"codex-acp"}, "", "/work"); !ok || e.SessionID != "n" {
		t.Fatalf("Last by name = %+v, %v", e, ok)
	}
	if e, _, _ := s.Last("", []string{"agent", "--acp"}, "", "/work"); e.SessionID != "a" {
		t.Fatalf("a named session matched a command line: %+v", e)
	}
}

// lastOnTarget: the same path on a --remote target is another place, kept
// apart on disk too.
func lastOnTarget(t *testing.T, s *Store) {
	t.Helper()
	far := entry("r", 6)
	far.Target = "ssh://devbox"
	record(t, s, far)
	if e, _, _ := s.Last("", []string{"agent", "--acp"}, "", "/work"); e.SessionID != "a" {
		t.Fatalf("a session on a target matched this machine's /work: %+v", e)
	}
	if e, ok, _ := s.Last("", []string{"agent", "--acp"}, "ssh://devbox", "/work"); !ok || e.SessionID != "r" {
		t.Fatalf("Last on the target = %+v, %v", e, ok)
	}
}

func TestBound(t *testing.T) {
	s, _ := newStore(t)
	s.Max = 5
	for i := range 12 {
		if err := s.Record(entry(fmt.Sprint(i), i)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "11,10,9,8,7" {
		t.Fatalf("kept %s, want the 5 newest", got)
	}
}

func TestCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":   "\x00\x01 not json",
		"truncated": `{"version":1,"sessions":[{"sessionId":"x"`,
		"shape":     `{"version":1,"sessions":{"a":1}}`,
		"future":    `{"version":99,"sessions":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			s, warnings := newStore(t)
			if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.Path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			list, err := s.List()
			if err != nil || len(list) != 0 {
				t.Fatalf("List of a corrupt store = %v, %v; want empty, nil", list, err)
			}
			// List, which holds no lock, leaves the file where it is.
			if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "ignoring it") {
				t.Fatalf("warnings %q", *warnings)
			}
			if b, err := os.ReadFile(s.Path); err != nil || string(b) != content {
				t.Fatalf("List moved the corrupt file: %q, %v", b, err)
			}
			// Record, under the lock, sets it aside and starts afresh.
			if err := s.Record(entry("a", 1)); err != nil {
				t.Fatal(err)
			}
			if len(*warnings) != 2 || !strings.Contains((*warnings)[1], "started afresh") {
				t.Fatalf("warnings %q", *warnings)
			}
			if b, err := os.ReadFile(s.Path + ".corrupt"); err != nil || string(b) != content {
				t.Fatalf("the corrupt file was not kept aside: %q, %v", b, err)
			}
			if list, err := s.List(); err != nil || ids(list) != "a" {
				t.Fatalf("after a new record: %v, %v", list, err)
			}
		})
	}
}

// TestInvalidEntries: entries that make no sense are dropped on reading,
// the others kept.
func TestInvalidEntries(t *testing.T) {
	s, warnings := newStore(t)
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	content := `{"version":1,"sessions":[
		{"sessionId":"","command":["a"],"cwd":"/w"},
		{"sessionId":"x","command":[],"cwd":"/w"},
		{"sessionId":"y","command":["a"],"cwd":"relative"},
		{"sessionId":"ok","command":["a"],"cwd":"/w","title":"hi\u001b[2Jthere\nmore","unknown":true}]}`
	if err := os.WriteFile(s.Path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || ids(list) != "ok" || list[0].Title != "hi[2Jthere" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if len(*warnings) != 0 {
		t.Fatalf("warnings %q", *warnings)
	}
}

// TestConcurrentWriters: writers at once, each in its own Store value as
// separate processes would be, lose no entry.
func TestConcurrentWriters(t *testing.T) {
	s, _ := newStore(t)
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			st := &Store{Path: s.Path}
			for i := range each {
				errs <- st.Record(entry(fmt.Sprintf("w%d-%d", w, i), w*each+i))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != writers*each {
		t.Fatalf("%d entries, want %d", len(list), writers*each)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path), "*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"fix the bug", "fix the bug"},
		{"\n\n  first line  \nsecond", "first line"},
		{"a\x1b[31mred\x1b[0m\u202eevil", "a[31mred[0mevil"},
		{"tabs\tand   spaces", "tabs and spaces"},
		{strings.Repeat("é", 100), strings.Repeat("é", 38) + "…"},
		{"\xff\xfe", ""},
	} {
		if got := Title(tc.in); got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	config := func() (string, error) { return `C:\Users\u\AppData\Roaming`, nil }
	for _, tc := range []struct {
		goos string
		env  map[string]string
		home func() (string, error)
		want string
	}{
		{"linux", map[string]string{"XDG_STATE_HOME": "/x/state"}, home, "/x/state/acpterm"},
		{"linux", map[string]string{"XDG_STATE_HOME": "relative"}, home, "/home/u/.local/state/acpterm"},
		{"darwin", nil, home, "/home/u/.local/state/acpterm"},
		{"linux", nil, noHome, ""},
		{"windows", nil, noHome, filepath.Join(`C:\Users\u\AppData\Roaming`, "acpterm")},
	} {
		got, err := stateDir(tc.goos, env(tc.env), tc.home, config)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s %v: %q, %v; want %q", tc.goos, tc.env, got, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"sessions":[{"sessionId":"a","command":["x"],"cwd":"/w","title":"t","created":"2026-01-01T00:00:00Z","updated":"2026-01-02T00:00:00Z"}]}`))
	f.Add([]byte(`{"sessions":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := parse(b)
		if err != nil {
			return
		}
		for i, e := range fl.Sessions {
			if e.SessionID == "" || len(e.Command) == 0 || !filepath.IsAbs(e.Cwd) {
				t.Fatalf("invalid entry kept: %+v", e)
			}
			if e.Title != Title(e.Title) || len(e.Title) > titleMax {
				t.Fatalf("title not sanitized: %q", e.Title)
			}
			if i > 0 && fl.Sessions[i-1].Updated.Before(e.Updated) {
				t.Fatal("not sorted newest first")
			}
		}
	})
}

// TestSandboxCacheDirInStateDir: the sandbox package works out the
// commands' caches' directory itself (it cannot import this one); it is
// sandbox-cache in the state directory, whatever XDG_STATE_HOME says.
// Not parallel: it sets the environment.
func TestSandboxCacheDirInStateDir(t *testing.T) {
	for _, xdg := range []string{"", "/xdg/state", "relative/state"} {
		t.Setenv("XDG_STATE_HOME", xdg)
		t.Setenv("HOME", "/home/u")
		dir, err := StateDir()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sandbox.DefaultCacheDir(), filepath.Join(dir, "sandbox-cache"); got != want {
			t.Errorf("XDG_STATE_HOME=%q: sandbox.DefaultCacheDir() = %s, want %s", xdg, got, want)
		}
	}
}
