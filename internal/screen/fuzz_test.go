package screen_test

import (
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/internal/screen"
)

// FuzzScreen: whatever is written, in whatever pieces, at whatever size,
// Write does not panic, Text is valid UTF-8 within the limit, and the
// history (all the screen keeps beyond its cells) stays bounded. And the
// pieces do not matter: written whole (sequences in one piece take the
// fast path) or a byte at a time (every sequence goes through the parser),
// the text is the same. And a line whose text is taken as its cells holds
// only ASCII characters there.
func FuzzScreen(f *testing.F) {
	f.Add([]byte("progress 10%\r\x1b[Kdone\r\n"), uint8(80), uint8(24), uint16(64), uint8(3), uint8(0))
	f.Add([]byte("\x1b[?1049h\x1b[2J\x1b[5;5H日本\x1b[?1049l\xff\xe6\x97"), uint8(4), uint8(2), uint16(10), uint8(1), uint8(7))
	f.Add([]byte("\x1b[2;3r\x1bM\x1b[5L\x1b[3M\x1b[9@\x1b[4P\x1b[99X\x1b[3S\x1b[2T\x1b7\x1b8\x1bc"), uint8(10), uint8(5), uint16(1000), uint8(2), uint8(3))
	f.Add([]byte("e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301\ta\bb\x1b]0;t\x07"), uint8(1), uint8(1), uint16(0), uint8(5), uint8(200))
	f.Fuzz(func(t *testing.T, in []byte, cols, rows uint8, limit uint16, pieces, resizeAt uint8) {
		s := screen.New(int(cols), int(rows), int(limit))
		step := len(in)/(int(pieces)+1) + 1
		for i := 0; i < len(in); i += step {
			if i/step == int(resizeAt)%4 {
				s.Resize(int(rows)+1, int(cols)%7+1)
			}
			s.Write(in[i:min(i+step, len(in))])
			if err := screen.CheckLines(s); err != nil {
				t.Fatal(err)
			}
		}
		// Written over and over, the input must not grow what is kept.
		for range 3 {
			s.Write(in)
		}
		got, _ := s.Text()
		if len(got) > int(limit) {
			t.Fatalf("text of %d bytes over the limit %d", len(got), limit)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		whole, bytewise := screen.New(int(cols), int(rows), int(limit)), screen.New(int(cols), int(rows), int(limit))
		whole.Write(in)
		for i := range in {
			bytewise.Write(in[i : i+1])
		}
		w, wt := whole.Text()
		b, bt := bytewise.Text()
		if w != b || wt != bt {
			t.Fatalf("written whole: %q (%v)\nbyte by byte: %q (%v)", w, wt, b, bt)
		}
		if h := screen.HistoryLen(s); h > 2*int(limit)+4096+screen.MaxCols*4*4 {
			t.Fatalf("history of %d bytes for a limit of %d", h, limit)
		}
	})
}
