//go:build linux

package probe

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeldAliveBusybox: the script that holds a command for
// release-stops-command stays blocked on its gate under busybox sh (a
// container's only shell), whose open of a FIFO the SIGCHLD of the
// script's own helper interrupts unless the helper was waited for; and
// the gate lets it go.
func TestHeldAliveBusybox(t *testing.T) {
	t.Parallel()
	const busybox = "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing: apt-get install -y busybox-static (.ci/run does)", busybox)
	}
	for i := range 5 {
		dir := t.TempDir()
		gate, hold := filepath.Join(dir, "gate"), filepath.Join(dir, "held")
		cmd := exec.Command(busybox, "sh", "-c", heldAlive, "sh", gate, hold)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("run %d: %q, %v; stderr %q", i, line, err, &stderr)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Held, it does not end on its own: the bound is how long it is
		// given to show that it does.
		select {
		case err := <-exited:
			t.Fatalf("run %d: the held script ended by itself (%v): %q", i, err, &stderr)
		case <-time.After(300 * time.Millisecond):
		}
		g, err := os.OpenFile(gate, os.O_RDWR, 0) // never blocks, on Linux
		if err != nil {
			t.Fatal(err)
		}
		_, _ = g.WriteString("go\n")
		g.Close()
		select {
		case err := <-exited:
			if err != nil || strings.TrimSpace(stderr.String()) != "" {
				t.Errorf("run %d: let go: %v, stderr %q", i, err, &stderr)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("run %d: still held 10 s after the gate was opened", i)
		}
		if _, err := os.Stat(gate); err == nil {
			t.Errorf("run %d: the gate was not removed", i)
		}
	}
}
