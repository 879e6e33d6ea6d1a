//go:build unix

package terminal

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// drainReady must return once the pipe is empty although a writer still
// holds it open (a background grandchild), with everything written before;
// and a deadline that has passed must stop it before it reads anything.
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
	drainReady(pr, make([]byte, minReadBuf), time.Now().Add(-time.Second), collect)
	if len(got) != 0 {
		t.Fatalf("drained %d bytes after the deadline", len(got))
	}
}
