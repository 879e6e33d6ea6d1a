package main

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/creack/pty"
)

func init() { timeOnPTY = timePTY }

// timePTY runs a command to the end on a pseudo-terminal of 40×120, reading
// everything it writes there, and returns its wall time in seconds.
func timePTY(b *testing.B, dir string, env []string, name string, args ...string) float64 {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"TERM=xterm"}, env...)...)
	start := time.Now()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		b.Fatal(err)
	}
	defer ptmx.Close()
	drained := make(chan struct{})
	var screen tailWriter
	go func() {
		defer close(drained)
		_, _ = io.Copy(&screen, ptmx) // ends with EIO once acpterm is gone
	}()
	err = cmd.Wait()
	elapsed := time.Since(start).Seconds()
	<-drained
	if err != nil {
		b.Fatalf("%s %q: %v\n%s", name, args, err, screen.tail)
	}
	return elapsed
}

// tailWriter keeps the last 2000 bytes written to it, for an error report.
type tailWriter struct{ tail []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p...)
	if n := len(w.tail); n > 2000 {
		w.tail = append(w.tail[:0], w.tail[n-2000:]...)
	}
	return len(p), nil
}
