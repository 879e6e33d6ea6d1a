package sandbox

import (
	"errors"
	"io"
	"regexp"
	"syscall"
	"testing"
)

// TestSpawnerOpenPTY: a pty opened in the helper's devpts is the command's
// controlling terminal, found by name there (/dev/pts/0), and /dev/tty
// reaches it; the host reads the command's output from the master.
func TestSpawnerOpenPTY(t *testing.T) {
	need(t, true)
	if !ptysAvailable() {
		t.Skip("no /dev/pts and /dev/ptmx here")
	}
	root, _ := workspace(t)
	s := newSpawner(t, &Policy{Mode: WorkspaceWrite, Writable: []string{root}})
	if !s.Applied().PrivatePTS {
		t.Skip("no private devpts for the spawner's commands")
	}
	master, tty, err := s.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	c, err := s.Start(&Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", "tty; echo via-dev-tty > /dev/tty; ps -o stat= -p $$"},
		Stdin: tty, Stdout: tty, Stderr: tty, Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL,
	})
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(master) // until EIO: the command has exited
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("reading the master: %v, want EIO at the end", err)
	}
	if st, err := c.Wait(); err != nil || st != (ExitStatus{}) {
		t.Errorf("Wait = %+v, %v", st, err)
	}
	if err := c.Release(); err != nil {
		t.Error(err)
	}
	want := regexp.MustCompile(`^/dev/pts/0\r\nvia-dev-tty\r\n[RS]s\+\r\n$`)
	if !want.MatchString(string(out)) {
		t.Errorf("output %q, want a match of %s", out, want)
	}
}

// TestSpawnerOpenPTYWithoutDevpts: a spawner whose commands have no devpts
// of their own says so.
func TestSpawnerOpenPTYWithoutDevpts(t *testing.T) {
	need(t, false)
	s := newSpawner(t, &Policy{Mode: Off, Network: DenyNetwork, BestEffort: true})
	if s.Applied().PrivatePTS {
		t.Skip("this spawner has a private devpts")
	}
	if _, _, err := s.OpenPTY(); !errors.Is(err, ErrNoPTY) {
		t.Errorf("OpenPTY: %v, want ErrNoPTY", err)
	}
}
