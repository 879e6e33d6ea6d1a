package workspace_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
)

const outsideContent = "OUTSIDE\n"

// raceFixture makes root/race (a directory holding file) and root/race.alt
// (a symlink to outside, which holds a file of the same name) and returns
// a function that keeps exchanging the two names until stop is closed,
// reporting how many exchanges it made.
func raceFixture(t *testing.T, root, outside string) (swap func(stop <-chan struct{}) int) {
	t.Helper()
	race, alt := filepath.Join(root, "race"), filepath.Join(root, "race.alt")
	if err := os.Mkdir(race, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(race, "file"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "file"), []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, alt); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, race, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2(RENAME_EXCHANGE): %v", err)
	}
	return func(stop <-chan struct{}) int {
		for n := 1; ; n++ {
			select {
			case <-stop:
				return n
			default:
			}
			// Atomic: race always exists, as a directory or as the link.
			if err := unix.Renameat2(unix.AT_FDCWD, race, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return n
			}
		}
	}
}

// TestSymlinkSwapRace: while root/race keeps turning from a directory into
// a symlink leading outside and back, no read returns the outside file and
// no write lands outside. The check-then-open-by-name code this replaced
// failed it (a few percent of calls escaped).
func TestSymlinkSwapRace(t *testing.T) {
	ws, root, outside := testWorkspace(t)
	swap := raceFixture(t, root, outside)
	path := filepath.Join(root, "race", "file")

	const calls, workers = 2000, 8
	var readOK, writeOK, refused, leaked atomic.Int64
	stop := make(chan struct{})
	var swapper, clients sync.WaitGroup
	var swaps int
	swapper.Go(func() { swaps = swap(stop) })
	next := make(chan int)
	for range workers {
		clients.Go(func() {
			for i := range next {
				var err error
				if i%2 == 0 {
					var resp *acp.ReadTextFileResponse
					resp, err = ws.ReadTextFile(context.Background(), &acp.ReadTextFileRequest{SessionID: "s", Path: path})
					if err == nil && resp.Content == outsideContent {
						leaked.Add(1)
					} else if err == nil {
						readOK.Add(1)
					}
				} else {
					_, err = ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: "written\n"})
					if err == nil {
						writeOK.Add(1)
					}
				}
				if err != nil {
					if code := acp.ErrorCode(err); code != acp.CodeInvalidParams && code != acp.CodeResourceNotFound {
						t.Errorf("call %d: unexpected error %v (code %d)", i, err, code)
					}
					refused.Add(1)
				}
			}
		})
	}
	for i := range 2 * calls {
		next <- i
	}
	close(next)
	clients.Wait()
	close(stop)
	swapper.Wait()

	t.Logf("%d reads, %d writes, %d exchanges: %d reads and %d writes served, %d refused, %d reads leaked",
		calls, calls, swaps, readOK.Load(), writeOK.Load(), refused.Load(), leaked.Load())
	if leaked.Load() != 0 {
		t.Errorf("%d reads returned the file outside the root, want 0", leaked.Load())
	}
	assertOutsideUntouched(t, outside)
	assertNoTemp(t, root)
	if readOK.Load()+writeOK.Load() == 0 || refused.Load() == 0 {
		t.Errorf("the race was not exercised: %d served, %d refused", readOK.Load()+writeOK.Load(), refused.Load())
	}
}

// assertOutsideUntouched checks that outside holds what raceFixture and
// workspace put there, unchanged.
func assertOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(outside, "file"))
	if err != nil || string(b) != outsideContent {
		t.Errorf("the file outside (-want +got):\n-%q\n+%q (%v)", outsideContent, b, err)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"file", "secret.txt"}; !slices.Equal(names, want) {
		t.Errorf("outside holds (-want +got):\n-%q\n+%q", want, names)
	}
}

// assertNoTemp checks that no write left its temporary file in root, even
// one whose directory was swapped while it wrote.
func assertNoTemp(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".acpterm-") {
			t.Errorf("a temporary file was left behind: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
