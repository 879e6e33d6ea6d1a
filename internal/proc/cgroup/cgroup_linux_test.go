//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/owner"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestCgroup makes a cgroup of kind "test", or skips where the tree is
// not writable.
func newTestCgroup(t *testing.T) string {
	t.Helper()
	dir, err := New("", "test")
	if err != nil {
		t.Skipf("no writable cgroup v2: %v", err)
	}
	t.Cleanup(func() {
		if err := RemoveTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// startIn starts `sleep 300` inside dir and returns its pid; the cleanup
// kills and reaps it.
func startIn(t *testing.T, dir string, setsid bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := Start(cmd, dir); err != nil {
		t.Fatal(err)
	}
	if cmd.SysProcAttr.UseCgroupFD {
		t.Error("Start left UseCgroupFD set with a closed fd")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestNewNameAndPlacement(t *testing.T) {
	dir := newTestCgroup(t)
	own, err := Own()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != own {
		t.Errorf("cgroup %s is not under the process's own cgroup %s", dir, own)
	}
	start, err := owner.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(dir)
	want := fmt.Sprintf("acpterm-%d-%d-test-", os.Getpid(), start)
	if len(name) != len(want)+8 || name[:len(want)] != want {
		t.Errorf("name %q, want %q followed by 8 hex digits", name, want)
	}
	if Stale(name) {
		t.Errorf("the live owner's cgroup %s counts as stale", name)
	}
}

func TestStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// A zombie: exited, not reaped.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	self := os.Getpid()
	start, err := owner.StartTime(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stale bool
	}{
		{fmt.Sprintf("acpterm-%d-%d-agent-0123abcd", self, start), false},
		{fmt.Sprintf("acpterm-%d-%d-agent-0123abcd", self, start+1), true}, // PID reused
		{fmt.Sprintf("acpterm-%d-%d-terms-0123abcd", dead.Process.Pid, start), true},
		{fmt.Sprintf("acpterm-%d-1-terms-0123abcd", zombie.Process.Pid), true},
		{fmt.Sprintf("acpterm-%d-deadbeef", dead.Process.Pid), true}, // older naming
		{fmt.Sprintf("acpterm-%d-deadbeef", self), false},
		{fmt.Sprintf("acpterm-%d-x-agent-0123abcd", dead.Process.Pid), false},
		{fmt.Sprintf("acpterm-%d-1-agent", dead.Process.Pid), false},
		{"acpterm-0-1-agent-0123abcd", false},
		{"acpterm-x-deadbeef", false},
		{"user.slice", false},
		{fmt.Sprintf("other-%d-deadbeef", dead.Process.Pid), false},
	} {
		if got := Stale(c.name); got != c.stale {
			t.Errorf("Stale(%q) = %v, want %v", c.name, got, c.stale)
		}
	}
}

// A stale cgroup's members die, setsid or not, and it goes with its child
// cgroups; cgroups of live owners and of other programs stay.
func TestCleanStale(t *testing.T) {
	parent := newTestCgroup(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("acpterm-%d-1-agent-00000000", dead.Process.Pid))
	sub := filepath.Join(stale, "term_0")
	live := filepath.Join(parent, fmt.Sprintf("acpterm-%d-deadbeef", os.Getpid()))
	other := filepath.Join(parent, "not-ours")
	for _, d := range []string{sub, live, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := startIn(t, stale, true)
	b := startIn(t, sub, false)
	c := startIn(t, live, false)
	removed := CleanStale(parent)
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("CleanStale removed %q, want [%s]", removed, stale)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s still there: %v", stale, err)
	}
	if err := proctest.WaitExit([]int{a.Process.Pid, b.Process.Pid}, 5*time.Second); err != nil {
		t.Errorf("members of the stale cgroup: %v", err)
	}
	if !proctest.Alive(c.Process.Pid) {
		t.Error("a live owner's cgroup lost its member")
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// Remove must wait for killed members to leave (the kernel removes them
// asynchronously) and must not wait at all when the cgroup is busy for
// another reason, such as a child cgroup.
func TestRemove(t *testing.T) {
	parent := newTestCgroup(t)
	dir := filepath.Join(parent, "leaf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, dir, false)
	if busy, err := Populated(dir); err != nil || !busy {
		t.Fatalf("Populated = %v, %v; want true", busy, err)
	}
	if err := unix.Rmdir(dir); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("rmdir of a populated cgroup: %v, want EBUSY", err)
	}
	if err := Kill(dir); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir); err != nil {
		t.Fatalf("Remove after Kill: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup still there: %v", err)
	}
	if err := proctest.WaitExit([]int{cmd.Process.Pid}, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	child := filepath.Join(parent, "p", "child")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := Remove(filepath.Dir(child)); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Remove of a cgroup with a child: %v, want EBUSY", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("Remove waited %v for a cgroup busy with a child", d)
	}
	// RemoveTree takes the child too, with a member in it.
	startIn(t, child, true)
	if err := RemoveTree(filepath.Dir(child)); err != nil {
		t.Fatal(err)
	}
}

func TestSignal(t *testing.T) {
	dir := newTestCgroup(t)
	cmd := startIn(t, dir, true)
	Signal(dir, syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("member exit: %v, want killed by SIGTERM", err)
	}
}

func TestPopulatedKey(t *testing.T) {
	for _, c := range []struct {
		in       string
		busy, ok bool
	}{
		{"populated 1\nfrozen 0\n", true, true},
		{"populated 0\nfrozen 0\n", false, true},
		{"frozen 0\n", false, false},
		{"", false, false},
	} {
		if busy, ok := populated([]byte(c.in)); busy != c.busy || ok != c.ok {
			t.Errorf("populated(%q) = %v, %v; want %v, %v", c.in, busy, ok, c.busy, c.ok)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/sys/fs/cgroup`:        "/sys/fs/cgroup",
		`/mnt/with\040space`:    "/mnt/with space",
		`/a\134b`:               `/a\b`,
		`/trailing\04`:          `/trailing\04`,
		`/not\9990octal/at/all`: `/not\9990octal/at/all`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRemoveOwn: RemoveOwn kills the members of every cgroup New made and
// not yet removed, and removes the cgroups.
func TestRemoveOwn(t *testing.T) {
	dir, err := New("", "test")
	if err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	cmd := exec.Command("sleep", "60")
	if err := Start(cmd, dir); err != nil {
		_ = Remove(dir)
		t.Fatal(err)
	}
	RemoveOwn(EmptyTimeout)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still there after RemoveOwn: %v", dir, err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("sleep 60 exited 0: RemoveOwn did not kill it")
	}
}
