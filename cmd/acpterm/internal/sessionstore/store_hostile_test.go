package sessionstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOversizedFile: a store file larger than any store acpterm writes
// (tampered with, or not ours) is set aside like a corrupt one, and the
// store starts afresh, rather than failing every later run.
func TestOversizedFile(t *testing.T) {
	s, warnings := newStore(t)
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	big := `{"version":1,"sessions":[],"pad":"` + strings.Repeat("x", maxFileSize) + `"}`
	if err := os.WriteFile(s.Path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("List of an oversized store = %d entries, %v; want empty, nil", len(list), err)
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "ignoring it") {
		t.Fatalf("warnings %q", *warnings)
	}
	if err := s.Record(entry("a", 1)); err != nil {
		t.Fatal(err)
	}
	if len(*warnings) != 2 || !strings.Contains((*warnings)[1], "started afresh") {
		t.Fatalf("warnings %q", *warnings)
	}
	if fi, err := os.Stat(s.Path + ".corrupt"); err != nil || fi.Size() != int64(len(big)) {
		t.Fatalf("the oversized file was not kept aside: %v", err)
	}
	if list, err := s.List(); err != nil || ids(list) != "a" {
		t.Fatalf("after a new record: %v, %v", ids(list), err)
	}
}

// TestHugeSessionID: the session ID is the agent's, of any length; an
// entry with one too long to keep is refused, and does not make the file
// too large to read, which would lose every other entry.
func TestHugeSessionID(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Record(entry("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(entry(strings.Repeat("i", maxFileSize), 2)); err == nil {
		t.Error("an entry with a session ID of 8 MiB was recorded")
	}
	if err := s.Record(entry("b", 3)); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || ids(list) != "b,a" {
		t.Fatalf("List = %.80q, %v; want b,a", ids(list), err)
	}
}

// TestNotARegularFile: a store path that names a FIFO (or a symlink to
// one), or a directory, is an error at once: opening a FIFO to read it
// would wait for a writer forever.
func TestNotARegularFile(t *testing.T) {
	for _, kind := range []string{"fifo", "symlink to fifo", "directory"} {
		t.Run(kind, func(t *testing.T) {
			s, _ := newStore(t)
			dir := filepath.Dir(s.Path)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			fifo := ""
			switch kind {
			case "fifo":
				fifo = s.Path
			case "symlink to fifo":
				fifo = filepath.Join(dir, "elsewhere")
				if err := os.Symlink(fifo, s.Path); err != nil {
					t.Fatal(err)
				}
			case "directory":
				if err := os.Mkdir(s.Path, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if fifo != "" && !mkfifo(t, fifo) {
				return
			}
			for _, op := range []struct {
				name string
				f    func() error
			}{
				{"List", func() error { _, err := s.List(); return err }},
				{"Record", func() error { return s.Record(entry("a", 1)) }},
			} {
				done := make(chan error, 1)
				go func() { done <- op.f() }()
				select {
				case err := <-done:
					if err == nil {
						t.Errorf("%s of a %s: no error", op.name, kind)
					}
				case <-time.After(10 * time.Second):
					// Not a measurement: the call is stuck. A writer lets
					// it go, so that the goroutine ends.
					w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err == nil {
						w.Close()
					}
					<-done
					t.Fatalf("%s of a %s blocked", op.name, kind)
				}
			}
			if fi, err := os.Lstat(s.Path); err != nil || fi.Mode().IsRegular() {
				t.Fatalf("the %s at the store's path was replaced: %v", kind, err)
			}
		})
	}
}
