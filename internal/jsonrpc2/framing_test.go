package jsonrpc2

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type frame struct {
	line    string
	tooLong bool
}

func readFrames(t *testing.T, r io.Reader, max int) ([]frame, error) {
	t.Helper()
	lr := newLineReader(r, max)
	var got []frame
	for {
		line, _, tooLong, err := lr.next()
		if err != nil {
			return got, err
		}
		got = append(got, frame{string(line), tooLong})
		if cap(lr.buf) > max+2+readBufSize {
			t.Fatalf("line buffer grew to %d bytes with max %d", cap(lr.buf), max)
		}
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("a", 3*readBufSize) // spans several reads of the buffer
	tests := []struct {
		name string
		in   string
		max  int
		want []frame
	}{
		{"empty", "", 10, nil},
		{"lines", "a\nbb\n", 10, []frame{{"a", false}, {"bb", false}}},
		{"blank lines are returned empty", "\n\n", 10, []frame{{"", false}, {"", false}}},
		{"CRLF", "a\r\nb\r\n", 10, []frame{{"a", false}, {"b", false}}},
		{"lone CR kept", "a\rb\n", 10, []frame{{"a\rb", false}}},
		{"final line without newline", "a\nlast", 10, []frame{{"a", false}, {"last", false}}},
		{"exactly max", "12345\n", 5, []frame{{"12345", false}}},
		{"exactly max with CRLF", "12345\r\n", 5, []frame{{"12345", false}}},
		{"one over max", "123456\nok\n", 5, []frame{{"", true}, {"ok", false}}},
		{"one over max with CRLF", "123456\r\nok\n", 5, []frame{{"", true}, {"ok", false}}},
		{"over max at EOF", "123456", 5, []frame{{"", true}}},
		{"long line within max", long + "\nok\n", len(long), []frame{{long, false}, {"ok", false}}},
		{"long line over max", long + "\nok\n", readBufSize, []frame{{"", true}, {"ok", false}}},
		{"long line over max at EOF", long, readBufSize, []frame{{"", true}}},
	}
	for _, tt := range tests {
		for _, r := range []struct {
			name string
			r    io.Reader
		}{
			{"whole", strings.NewReader(tt.in)},
			{"bytewise", iotest.OneByteReader(strings.NewReader(tt.in))},
		} {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				got, err := readFrames(t, r.r, tt.max)
				if err != io.EOF {
					t.Errorf("ended with %v, want io.EOF", err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d frames %.60v, want %d %.60v", len(got), got, len(tt.want), tt.want)
				}
				for i := range got {
					// A too-long frame carries the start of its line, for its id.
					if got[i].tooLong && tt.want[i].tooLong {
						if len(got[i].line) > headSize || !strings.Contains(tt.in, got[i].line) {
							t.Errorf("frame %d: too long, with head %.40q", i, got[i].line)
						}
						continue
					}
					if got[i] != tt.want[i] {
						t.Errorf("frame %d: got %.40q (tooLong %v), want %.40q (tooLong %v)", i, got[i].line, got[i].tooLong, tt.want[i].line, tt.want[i].tooLong)
					}
				}
			})
		}
	}
}

// A read error other than EOF ends the stream and drops the partial line it cut.
func TestLineReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom))
	got, err := readFrames(t, r, 100)
	if err != boom {
		t.Errorf("ended with %v, want %v", err, boom)
	}
	if len(got) != 1 || got[0].line != "a" {
		t.Errorf("got %v, want just \"a\"", got)
	}
}

// endless yields 'x' forever without allocating: a line that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A line far past max is skipped with memory bounded by max plus the read buffer.
func TestLineReaderSkipsWithoutGathering(t *testing.T) {
	lr := newLineReader(io.MultiReader(io.LimitReader(endless{}, 64<<20), strings.NewReader("\nok\n")), 1000)
	_, _, tooLong, err := lr.next()
	if err != nil || !tooLong {
		t.Fatalf("got tooLong=%v err=%v, want a skipped line", tooLong, err)
	}
	if cap(lr.buf) > 1002+readBufSize {
		t.Errorf("gathered %d bytes of a line past the 1000-byte limit", cap(lr.buf))
	}
	line, _, _, err := lr.next()
	if err != nil || string(line) != "ok" {
		t.Errorf("next line: %q, %v", line, err)
	}
}
