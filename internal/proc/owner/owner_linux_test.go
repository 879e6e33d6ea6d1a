package owner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// exited returns the pid and start time of a process that has exited and
// been reaped.
func exited(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return pid, start
}

func TestDead(t *testing.T) {
	self := os.Getpid()
	start, err := StartTime(self)
	if err != nil {
		t.Fatal(err)
	}
	gone, goneStart := exited(t)
	tests := []struct {
		name string
		dead bool
	}{
		{fmt.Sprintf("acpterm-%d-%d-tmp-123", self, start), false},
		{fmt.Sprintf("acpterm-%d-%d-tmp-123", self, start+1), true}, // the PID was reused
		{fmt.Sprintf("acpterm-%d-%d-term_ab-cd-123", gone, goneStart), true},
		{fmt.Sprintf("acpterm-%d-0a1b", gone), true}, // older cgroup name
		{fmt.Sprintf("acpterm-%d-0a1b", self), false},
		{"acpterm-e2e-123", false},
		{"acpterm-term_0a1b-123", false},
		{"other-1-2-tmp-3", false},
		{"acpterm-x-1-tmp-3", false},
		{fmt.Sprintf("acpterm-%d-notanumber-tmp-3", gone), false},
	}
	for _, tt := range tests {
		if got := Dead(tt.name); got != tt.dead {
			t.Errorf("Dead(%q) = %v, want %v", tt.name, got, tt.dead)
		}
	}
}

// TempDir names its directory after the process; CleanDir removes those of
// dead owners only.
func TestTempDirAndCleanDir(t *testing.T) {
	mine, err := TempDir("tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(mine)
	prefix, err := Prefix("tmp")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(mine), prefix) {
		t.Fatalf("TempDir made %s, want a name starting %s", mine, prefix)
	}

	dir := t.TempDir()
	gone, goneStart := exited(t)
	stale := filepath.Join(dir, fmt.Sprintf("acpterm-%d-%d-sandbox-42", gone, goneStart))
	live := filepath.Join(dir, filepath.Base(mine))
	other := filepath.Join(dir, "acpterm-e2e-42")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "cmd-1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if got := CleanDir(dir); !slices.Equal(got, []string{stale}) {
		t.Errorf("CleanDir removed %q, want [%s]", got, stale)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v (it must be kept)", d, err)
		}
	}
}
