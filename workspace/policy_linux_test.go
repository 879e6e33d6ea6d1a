package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

// TestWritePolicyGitSwapRace: while writes go to WS/race/config, WS/race
// is exchanged, over and over, with a symlink to .git (and to a nested
// repository's .git). No write lands in either .git: the walk checks the
// directories it opened, not names that may change after the check. (The
// code before the walk followed the symlink within the root and wrote
// .git/config.)
func TestWritePolicyGitSwapRace(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git", "race", "sub/.git"} {
		mkdir(t, filepath.Join(root, d))
	}
	for _, p := range []string{".git/config", "sub/.git/config", "race/config"} {
		writeFile(t, filepath.Join(root, p), "[core]\n")
	}
	symlink(t, ".git", filepath.Join(root, "race.git"))
	symlink(t, "sub/.git", filepath.Join(root, "race.sub"))
	ws, err := workspace.NewWorkspace([]string{root}, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	race := filepath.Join(root, "race")
	stop := make(chan struct{})
	var swaps atomic.Int64
	var swapErr error
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			alt := filepath.Join(root, "race.git")
			if i%4 >= 2 {
				alt = filepath.Join(root, "race.sub")
			}
			// Each exchange is undone by the next one on the same pair.
			if err := unix.Renameat2(unix.AT_FDCWD, race, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
				swapErr = err
				return
			}
			swaps.Add(1)
		}
	})
	const writes = 2000
	var served, refused int
	for range writes {
		_, err := ws.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: filepath.Join(race, "config"), Content: planted})
		switch c := acp.ErrorCode(err); {
		case err == nil:
			served++
		case c == acp.CodeInvalidParams || c == acp.CodePermissionDenied || c == acp.CodeResourceNotFound:
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	close(stop)
	swapper.Wait()
	if swapErr != nil {
		t.Fatalf("the swapper failed: %v", swapErr)
	}
	t.Logf("%d writes served, %d refused, %d swaps", served, refused, swaps.Load())
	for _, p := range []string{".git/config", "sub/.git/config"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != "[core]\n" {
			t.Errorf("%s holds %q", p, b)
		}
	}
	for _, d := range []string{".git", "sub/.git"} {
		entries, _ := os.ReadDir(filepath.Join(root, d))
		if len(entries) != 1 {
			t.Errorf("%s holds %d entries, want 1 (config)", d, len(entries))
		}
	}
	if served == 0 || refused == 0 || swaps.Load() == 0 {
		t.Errorf("the race was not exercised: %d served, %d refused, %d swaps", served, refused, swaps.Load())
	}
}
