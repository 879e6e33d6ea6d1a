//go:build linux

package terminal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// removeCgroup must wait for killed members to leave (the kernel removes
// them asynchronously) and must not wait at all when the cgroup is busy
// for another reason, such as a child cgroup.
func TestRemoveCgroup(t *testing.T) {
	m := newTestManager(t, nil)
	if m.Isolation() != IsolationCgroup {
		t.Skipf("isolation %s", m.Isolation())
	}
	dir := filepath.Join(m.iso.dir, "test-"+randomHex(4))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Start()
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	if err := unix.Rmdir(dir); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("rmdir of a populated cgroup: %v, want EBUSY", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := removeCgroup(dir); err != nil {
		t.Fatalf("removeCgroup after cgroup.kill: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup still there: %v", err)
	}
	<-reaped

	parent := filepath.Join(m.iso.dir, "test-"+randomHex(4))
	child := filepath.Join(parent, "child")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := removeCgroup(parent); !errors.Is(err, unix.EBUSY) {
		t.Errorf("removeCgroup of a cgroup with a child: %v, want EBUSY", err)
	}
	if err := removeCgroup(child); err != nil {
		t.Fatal(err)
	}
	if err := removeCgroup(parent); err != nil {
		t.Fatal(err)
	}
}

func TestPopulated(t *testing.T) {
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
