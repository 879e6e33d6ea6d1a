//go:build unix

package terminal

import (
	"bytes"
	"os"
	"runtime"
	"testing"
	"time"
)

// drainReady must return once the pipe is empty although a writer still
// holds it open (a background grandchild), with everything written before;
// and a deadline that passed before it ran (a reader a loaded machine ran
// late) must still let it read what the pipe held, on Linux, and stop it
// from reading more.
func TestDrainReady(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	want := bytes.Repeat([]byte("0123456789"), 6000) // fits a pipe buffer
	if _, err := pw.Write(want); err != nil {
		t.Fatal(err)
	}
	var got []byte
	collect := func(p []byte) { got = append(got, p...) }
	drainReady(pr, make([]byte, minReadBuf), time.Now().Add(time.Hour), collect)
	if !bytes.Equal(got, want) {
		t.Fatalf("drained %d bytes, want %d", len(got), len(want))
	}

	if _, err := pw.Write(want); err != nil {
		t.Fatal(err)
	}
	got = nil
	wrote := 0
	late := func(p []byte) {
		collect(p)
		if wrote == 0 { // a descendant still writing: room is left for it
			n, _ := pw.Write(want[:minReadBuf])
			wrote = n
		}
	}
	drainReady(pr, make([]byte, minReadBuf), time.Now().Add(-time.Second), late)
	if runtime.GOOS == "linux" {
		// The read that finishes what was owed may take some of what
		// came since, never all of it.
		if !bytes.HasPrefix(got, want) || len(got) >= len(want)+wrote {
			t.Fatalf("after the deadline, drained %d bytes: the pipe held %d, %d more came", len(got), len(want), wrote)
		}
	} else if len(got) != 0 {
		t.Fatalf("drained %d bytes after the deadline", len(got))
	}
}
