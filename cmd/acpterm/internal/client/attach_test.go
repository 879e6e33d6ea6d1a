package client

import (
	"slices"
	"strings"
	"testing"
)

func TestLastRows(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"a\nb\nc\n", 0, nil},
		{"a\nb\nc\n", 2, []string{"b", "c"}},
		{"a\nb\nc", 2, []string{"b", "c"}},
		{"a\nb\nc\n", 5, []string{"a", "b", "c"}},
		{"Password:", 23, []string{"Password:"}},
		{"\n\nx", 2, []string{"", "x"}},
	} {
		if got := lastRows(tc.text, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("lastRows(%q, %d) = %q, want %q", tc.text, tc.n, got, tc.want)
		}
	}
}

// TestTypeAheadBounded: lines kept during a turn come back once, and no
// more than maxTypeAhead bytes are kept.
func TestTypeAheadBounded(t *testing.T) {
	d := &driver{}
	d.keepTypeAhead([]byte("one\n"))
	d.keepTypeAhead([]byte("two\n"))
	if got := string(d.takeTypeAhead()); got != "one\ntwo\n" {
		t.Fatalf("kept %q", got)
	}
	if got := d.takeTypeAhead(); got != nil {
		t.Fatalf("kept again: %q", got)
	}
	big := []byte(strings.Repeat("x", maxTypeAhead))
	d.keepTypeAhead(big)
	d.keepTypeAhead([]byte("more\n"))
	if got := d.takeTypeAhead(); len(got) != maxTypeAhead {
		t.Fatalf("kept %d bytes, want at most %d", len(got), maxTypeAhead)
	}
}

// FuzzLastRows: the rows shown are at most n, and are the end of the
// command's text, whole lines.
func FuzzLastRows(f *testing.F) {
	for _, s := range []string{"", "a\nb\nc\n", "\n\n\n", "Password:", "x\r\ny"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, text string, n int) {
		if n > 1000 || n < -1 {
			return
		}
		rows := lastRows(text, n)
		if len(rows) > max(n, 0) {
			t.Fatalf("%d rows for n=%d", len(rows), n)
		}
		trimmed := strings.TrimSuffix(text, "\n")
		joined := strings.Join(rows, "\n")
		if !strings.HasSuffix(trimmed, joined) {
			t.Fatalf("rows %q are not the end of %q", rows, text)
		}
		if len(rows) > 0 && len(joined) < len(trimmed) && trimmed[len(trimmed)-len(joined)-1] != '\n' {
			t.Fatalf("rows %q begin inside a line of %q", rows, text)
		}
		if n > 0 && trimmed != "" && len(rows) < n && joined != trimmed {
			t.Fatalf("%d rows of %q for n=%d, but more were there", len(rows), text, n)
		}
	})
}
