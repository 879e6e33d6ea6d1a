package workspace

// Tests of readLines, the unexported line reader behind ReadTextFile.

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// endlessLine is a reader of n bytes holding no newline: a sparse file of
// any size, as an agent can make with truncate(1), reads like this.
type endlessLine struct{ n, read int64 }

func (r *endlessLine) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	clear(p[:k])
	r.read += k
	return int(k), nil
}

// TestReadLinesCancelledInLongLine: a cancelled request stops reading even
// inside one endless line that it skips (line 2 of a huge sparse file),
// where no line boundary ever comes to check the context at.
func TestReadLinesCancelledInLongLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &endlessLine{n: 1 << 30}
	_, err := readLines(ctx, r, 2, nil, 1<<20)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("readLines after cancel: %v, want context.Canceled", err)
	}
	if r.read > 1<<20 {
		t.Errorf("readLines read %d MiB after its request was cancelled, want at most 1 MiB", r.read>>20)
	}
}

func TestReadLinesBounds(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("x", 100<<10) + "\nshort\n" // a line longer than the reader's buffer
	got, err := readLines(ctx, strings.NewReader(long), 2, nil, 1<<20)
	if err != nil || got != "short\n" {
		t.Fatalf("after a long line: %q, %v", got, err)
	}
	got, err = readLines(ctx, strings.NewReader(long), 1, acpPtr(uint32(1)), 1<<20)
	if err != nil || got != long[:len(long)-len("short\n")] {
		t.Fatalf("the long line: %d bytes, %v", len(got), err)
	}
	if _, err := readLines(ctx, strings.NewReader(long), 1, nil, 50<<10); !errors.Is(err, errTooLarge) {
		t.Fatalf("over the bound: %v, want errTooLarge", err)
	}
	// Lines skipped before the range do not count towards the bound.
	got, err = readLines(ctx, strings.NewReader(long), 2, nil, 10)
	if err != nil || got != "short\n" {
		t.Fatalf("bound after skipped lines: %q, %v", got, err)
	}
}

func acpPtr[T any](v T) *T { return &v }
