package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Internal tests of the line tail, the bounded screenful the text
// renderer keeps of each terminal: its ring, its cut of a long line and
// its counts are what bound the renderer's memory, and the output shows
// them only through the last lines it prints.

func TestDisplayLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"crlf\r", "crlf"},
		{"10%\r50%\r100%", "100%"},
		{"\x1b[1;31mred\x1b[0m text", "red text"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"a\tb", "a       b"},
		{"ab\tc", "ab      c"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"c1 \u0085 \u009b", "c1  "},
		{"unfinished \x1b[31", "unfinished "},
		{"héllo wörld", "héllo wörld"},
	}
	for _, tt := range tests {
		if got := displayLine([]byte(tt.in)); got != tt.want {
			t.Errorf("displayLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLineTail(t *testing.T) {
	lt := newLineTail(3)
	lt.Write([]byte("one\ntw"))
	lt.Write([]byte("o\nthree\nfour\nfi"))
	lines, above := lt.Tail(10)
	if got := strings.Join(lines, "|"); got != "two|three|four|fi" || above != 1 {
		t.Fatalf("Tail(10) = %q, %d above", got, above)
	}
	lines, above = lt.Tail(2)
	if got := strings.Join(lines, "|"); got != "four|fi" || above != 3 {
		t.Fatalf("Tail(2) = %q, %d above", got, above)
	}
	if lt.Total() != 5 || lt.bytes != 21 {
		t.Fatalf("Total %d, bytes %d", lt.Total(), lt.bytes)
	}
	lt.Skip(100)
	lt.Write([]byte("x\n"))
	lines, _ = lt.Tail(3)
	if got := strings.Join(lines, "|"); got != "four|fi …|x" || lt.skipped != 100 {
		t.Fatalf("after a gap: %q, skipped %d", got, lt.skipped)
	}
	// A line longer than the bound is cut there.
	lt = newLineTail(2)
	lt.Write([]byte(strings.Repeat("y", 3*maxPartialLine)))
	lt.Write([]byte("\nz\n"))
	lines, _ = lt.Tail(2)
	if len(lines) != 2 || len(lines[0]) != maxPartialLine || lines[1] != "z" {
		t.Fatalf("long line: %d lines, first %d bytes", len(lines), len(lines[0]))
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s     string
		width int
		want  string
	}{{"hello", 10, "hello"}, {"hello", 5, "hello"}, {"hello", 4, "hel…"}, {"héllo", 3, "hé…"}, {"hello", 1, "…"}, {"hello", 0, "hello"}} {
		if got := clipColumns(tt.s, tt.width); got != tt.want {
			t.Errorf("clipColumns(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}

// FuzzDisplay checks what reaches the screen from arbitrary command output:
// valid UTF-8 without control characters, at most the lines asked for,
// and counts that add up.
func FuzzDisplay(f *testing.F) {
	f.Add([]byte("plain\nlines\n"), 3)
	f.Add([]byte("\x1b[31mred\r\nx\ty\x00\xff\xe2\x82"), 1)
	f.Add([]byte("\x1b]0;t\x07\x1b[\n\n\n"), 2)
	f.Add([]byte("0"), -50)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = int(uint(n)%20) + 1
		lt := newLineTail(n)
		// In two writes, split anywhere, like pipe reads.
		cut := len(data) / 2
		lt.Write(data[:cut])
		lt.Write(data[cut:])
		lines, above := lt.Tail(n)
		if len(lines) > n {
			t.Fatalf("%d lines, asked for %d", len(lines), n)
		}
		if above+uint64(len(lines)) != lt.Total() {
			t.Fatalf("%d above + %d shown != %d total", above, len(lines), lt.Total())
		}
		if lt.bytes != uint64(len(data)) {
			t.Fatalf("counted %d bytes of %d", lt.bytes, len(data))
		}
		for _, l := range lines {
			if !utf8.ValidString(l) {
				t.Fatalf("invalid UTF-8 %q", l)
			}
			for _, r := range l {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
					t.Fatalf("control character %U in %q", r, l)
				}
			}
		}
	})
}
