// Package expect is for tests that watch what a program writes, to a pipe
// or a terminal, and wait for a text to appear.
package expect

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects writes and lets a test wait for text in them. It is safe
// for one writer and one waiting test at a time.
type Buffer struct {
	mu   sync.Mutex
	buf  strings.Builder
	pos  int // Expect searches from here: the end of its last match
	wake chan struct{}
}

// NewBuffer returns an empty Buffer.
func NewBuffer() *Buffer { return &Buffer{wake: make(chan struct{}, 1)} }

// Write appends p and wakes a waiting Expect.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Expect waits until what was written since the previous match contains
// want, and fails the test if that has not happened within timeout.
func (b *Buffer) Expect(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		if i := strings.Index(b.buf.String()[b.pos:], want); i >= 0 {
			b.pos += i + len(want)
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-deadline.C:
			t.Fatalf("no %q within %v; the output is %q", want, timeout, b.String())
		}
	}
}
