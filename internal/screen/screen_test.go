package screen_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/internal/screen"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func render(cols, rows, limit int, chunks ...string) (string, bool) {
	s := screen.New(cols, rows, limit)
	for _, c := range chunks {
		s.Write([]byte(c))
	}
	return s.Text()
}

func TestText(t *testing.T) {
	tests := []struct {
		name       string
		cols, rows int
		in         []string
		want       string
	}{
		{"lines", 80, 24, []string{"a\r\nb\r\n"}, "a\nb\n"},
		{"no final newline", 80, 24, []string{"a\r\nb"}, "a\nb"},
		{"progress bar", 80, 24, []string{"[#   ] 25%\r", "[##  ] 50%\r", "[####] 100%\r\ndone\r\n"}, "[####] 100%\ndone\n"},
		{"progress bar with EL", 80, 24, []string{"downloading 10%\r\x1b[K", "ok\r\n"}, "ok\n"},
		{"colours", 80, 24, []string{"\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mtrue\x1b[m\r\n"}, "red true\n"},
		{"osc title and hyperlink", 80, 24, []string{"\x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\n"}, "link\n"},
		{"full-screen redraw", 20, 4, []string{"old1\r\nold2\r\n", "\x1b[H\x1b[2J\x1b[1;1Hframe 1\x1b[2;1Hx", "\x1b[H\x1b[2J\x1b[1;1Hframe 2\x1b[3;3Hy"}, "frame 2\n\n  y"},
		{"history then screen", 10, 3, []string{"1\r\n2\r\n3\r\n4\r\n5"}, "1\n2\n3\n4\n5"},
		{"wide characters", 10, 3, []string{"日本語ok\r\n"}, "日本語ok\n"},
		{"wide character wraps whole", 5, 3, []string{"ab日本語"}, "ab日本語"},
		{"wide character overwritten by half", 10, 3, []string{"日本\r", "x"}, "x 本"},
		{"combining mark", 10, 3, []string{"e\u0301!\r\n"}, "e\u0301!\n"},
		{"wrapped line has no break", 5, 3, []string{"abcdefgh\r\n"}, "abcdefgh\n"},
		{"wrapped line scrolled to history", 5, 2, []string{"abcdefgh\r\nz\r\n"}, "abcdefgh\nz\n"},
		{"backspace and tab", 80, 24, []string{"abc\b\bX\tY\r\n"}, "aXc     Y\n"},
		{"cursor moves", 20, 5, []string{"\x1b[3;5Hc\x1b[2Ab\x1b[1;1Ha\x1b[5Cd\x1b[Ge\x1b[4dv"}, "e    bd\n\n    c\n v"},
		{"erase to end of screen", 10, 3, []string{"aaa\r\nbbb\r\nccc\x1b[2;2H\x1b[J"}, "aaa\nb"},
		{"erase to cursor", 10, 3, []string{"abcdef\x1b[1;3H\x1b[1K"}, "   def"},
		{"erase line, its parameter explicit", 10, 3, []string{"abcdef\x1b[1;3H\x1b[0Kx\x1b[1;5H\x1b[2K"}, ""},
		{"erase line ends a pending wrap", 5, 3, []string{"abcde\x1b[Kf"}, "abcdf"},
		{"erase line with two parameters", 10, 3, []string{"abcdef\x1b[1;3H\x1b[1;5K"}, "   def"},
		{"erase characters", 10, 3, []string{"abcdef\x1b[1;2H\x1b[2X"}, "a  def"},
		{"insert and delete characters", 10, 3, []string{"abcdef\x1b[1;2H\x1b[2@XY\x1b[1;1H\x1b[P"}, "XYbcdef"},
		{"insert and delete lines", 10, 4, []string{"1\r\n2\r\n3\x1b[2;1H\x1b[LN\x1b[4;1H\x1b[M"}, "1\nN\n2\n"},
		{"scroll region", 10, 4, []string{"head\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\r\nd\x1b[r\x1b[4;1Hfoot"}, "head\nc\nd\nfoot"},
		{"reverse index at top", 10, 3, []string{"a\r\nb\x1b[H\x1bMz"}, "z\na\nb"},
		{"save and restore cursor", 10, 3, []string{"ab\x1b7\x1b[3;1Hz\x1b8c"}, "abc\n\nz"},
		{"alternate screen leaves its last screen", 20, 4, []string{"$ top\r\n", "\x1b[?1049h\x1b[H\x1b[2Jscreen 1", "\x1b[H\x1b[2Jscreen 2\x1b[2;1Hrow 2", "\x1b[?1049l", "$ "}, "$ top\nscreen 2\nrow 2\n$"},
		{"alternate screen does not touch history", 10, 2, []string{"a\r\nb\r\n", "\x1b[?1049h", "1\r\n2\r\n3\r\n4", "\x1b[?1049l"}, "a\nb\n3\n4\n"},
		{"line drawing", 10, 3, []string{"\x1b(0lqqk\x1b(B\r\n\x1b(0x\x1b(Bok\x1b(0x\r\n"}, "┌──┐\n│ok│\n"},
		{"invalid UTF-8", 10, 3, []string{"a\xffb\r\n"}, "a\uFFFDb\n"},
		{"sequence split across writes", 10, 3, []string{"a\x1b[", "31", "mb\xe6\x97", "\xa5\r\n"}, "ab日\n"},
		{"ASCII over characters beyond it", 20, 3, []string{"日本語é\rabcdefg"}, "abcdefg"},
		{"ASCII over half a wide character", 20, 3, []string{"日本\r\x1b[Cx"}, " x本"},
		{"characters beyond ASCII over ASCII", 20, 3, []string{"abcdefghij\r\x1b[2Cé日"}, "abé日fghij"},
		{"inserting moves characters beyond ASCII", 10, 3, []string{"aé日b\x1b[1;2H\x1b[2@"}, "a  é日b"},
		{"deleting moves characters beyond ASCII", 10, 3, []string{"aé日b\x1b[1;2H\x1b[P"}, "a日b"},
		{"blanks inside a long line", 40, 3, []string{"x\ty\tz0123456789abcdef\x1b[40G!\r\n"}, "x       y       z0123456789abcdef      !\n"},
		{"long line of characters beyond ASCII wraps", 10, 3, []string{strings.Repeat("é", 12) + "abc\r\n"}, strings.Repeat("é", 12) + "abc\n"},
		{"controls and DEL inside ASCII runs", 40, 3, []string{"0123456789\x7f0123456789\x00abcdefgh\x07ijklmnop\x1b[Kq\r\n"}, "01234567890123456789abcdefghijklmnopq\n"},
		{"line reused after holding characters beyond ASCII", 10, 2, []string{"日本語\r\nx\r\nabc\r\n"}, "日本語\nx\nabc\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := screen.New(tt.cols, tt.rows, 1<<20)
			for _, c := range tt.in {
				s.Write([]byte(c))
				if err := screen.CheckLines(s); err != nil {
					t.Fatalf("after %q: %v", c, err)
				}
			}
			got, trunc := s.Text()
			if got != tt.want || trunc {
				t.Errorf("text (-want +got):\n-%q\n+%q (truncated %v)", tt.want, got, trunc)
			}
			// Written a byte at a time, runs of ASCII and sequences take
			// the slow paths: the text must be the same.
			var bytes []string
			for _, c := range []byte(strings.Join(tt.in, "")) {
				bytes = append(bytes, string([]byte{c}))
			}
			if got, _ := render(tt.cols, tt.rows, 1<<20, bytes...); got != tt.want {
				t.Errorf("written a byte at a time (-want +got):\n-%q\n+%q", tt.want, got)
			}
		})
	}
}

func TestResize(t *testing.T) {
	s := screen.New(10, 4, 1<<20)
	s.Write([]byte("1\r\n2\r\n3\r\n4日本語"))
	s.Resize(6, 2) // the cursor's on row 4: two lines go to the history; 日本語 loses its last character
	if c, r := s.Size(); c != 6 || r != 2 {
		t.Fatalf("size %dx%d, want 6x2", c, r)
	}
	if got, _ := s.Text(); got != "1\n2\n3\n4日本" {
		t.Errorf("after shrinking: %q", got)
	}
	s.Write([]byte("\r\nabcdefgh"))
	if got, _ := s.Text(); got != "1\n2\n3\n4日本\nabcdefgh" {
		t.Errorf("writing at the new size: %q", got)
	}
	s.Resize(20, 5)
	s.Write([]byte("\x1b[5;1Hbottom"))
	if got, _ := s.Text(); got != "1\n2\n3\n4日本\nabcdefgh\n\n\nbottom" {
		t.Errorf("after growing: %q", got)
	}
	s.Resize(0, -3) // clamped to 1x1
	if c, r := s.Size(); c != 1 || r != 1 {
		t.Errorf("size %dx%d, want 1x1", c, r)
	}
}

func TestLimit(t *testing.T) {
	s := screen.New(20, 5, 100)
	for i := range 1000 {
		s.Write([]byte(strings.Repeat("x", i%17) + "é\r\n"))
	}
	got, trunc := s.Text()
	if !trunc {
		t.Error("not truncated")
	}
	if len(got) > 100 || !utf8.ValidString(got) {
		t.Errorf("text of %d bytes, valid %v: %q", len(got), utf8.ValidString(got), got)
	}
	if !strings.HasSuffix(got, strings.Repeat("x", 999%17)+"é\n") {
		t.Errorf("text does not end with the last line: %q", got)
	}
	// Sticky: a cleared screen does not make it whole again.
	s.Write([]byte("\x1b[2J"))
	if _, trunc := s.Text(); !trunc {
		t.Error("truncated did not stay set")
	}
	if got, trunc := render(10, 3, 0, "abc"); got != "" || !trunc {
		t.Errorf("limit 0: %q, %v", got, trunc)
	}
}

// TestScrolling scrolls screens of a few rows through many lines, as the
// screen's rows slide down their array and move back to its start, with
// resizes, scroll regions and the alternate screen in between: no line is
// lost, repeated or out of order.
func TestScrolling(t *testing.T) {
	var in, want strings.Builder
	n := 0
	lines := func(count int) {
		for range count {
			fmt.Fprintf(&in, "line %d\r\n", n)
			fmt.Fprintf(&want, "line %d\n", n)
			n++
		}
	}
	s := screen.New(20, 4, 1<<20)
	write := func() {
		s.Write([]byte(in.String()))
		in.Reset()
	}
	lines(50)
	write()
	s.Resize(20, 7)
	lines(30)
	write()
	s.Resize(20, 2)
	lines(9)
	write()
	s.Resize(20, 5)
	// Rows 2 and 3, a region, scroll within themselves, and then the
	// whole screen once more: line 88 goes to the history.
	s.Write([]byte("\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\r\nd\x1b[r\x1b[5;1Hlast\r\n"))
	want.WriteString("c\nd\n\nlast\n")
	if got, _ := s.Text(); got != want.String() {
		t.Fatalf("text:\n%s\nwant:\n%s", got, want.String())
	}
	// The alternate screen scrolls too, and leaves its last screen.
	s.Write([]byte("\x1b[?1049h\x1b[H"))
	for i := range 40 {
		fmt.Fprintf(s, "alt %d\r\n", i)
	}
	s.Write([]byte("\x1b[?1049l"))
	want.WriteString("alt 36\nalt 37\nalt 38\nalt 39\n")
	if got, _ := s.Text(); got != want.String() {
		t.Fatalf("after the alternate screen:\n%s\nwant:\n%s", got, want.String())
	}
}
