package terminal

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTailExactBytes(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{"empty", 10, nil, "", false},
		{"under", 10, []string{"abc"}, "abc", false},
		{"exactly the limit", 10, []string{"0123456789"}, "0123456789", false},
		{"one over", 10, []string{"0123456789", "a"}, "123456789a", true},
		{"one big write", 4, []string{"0123456789"}, "6789", true},
		{"many small writes", 3, []string{"a", "b", "c", "d", "e"}, "cde", true},
		{"wraps twice", 4, []string{"abc", "def", "ghi"}, "fghi", true},
		{"limit 0, nothing written", 0, nil, "", false},
		{"limit 0, empty write", 0, []string{""}, "", false},
		{"limit 0 keeps nothing", 0, []string{"x"}, "", true},
		{"limit 1", 1, []string{"xy"}, "y", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(tt.limit)
			for _, w := range tt.writes {
				tl.Write([]byte(w))
			}
			if got, trunc := tl.Text(true); got != tt.want || trunc != tt.truncated || tl.Truncated() != tt.truncated {
				t.Errorf("got (%q, %v), want (%q, %v)", got, trunc, tt.want, tt.truncated)
			}
		})
	}
}

func TestTailGrowsLazily(t *testing.T) {
	tl := newTail(16 << 20)
	tl.Write([]byte("hello"))
	if c := tl.size; c > minTailAlloc {
		t.Errorf("buffer of %d bytes for 5 bytes of output", c)
	}
	big := bytes.Repeat([]byte("x"), 20<<20)
	tl.Write(big)
	if c := tl.size; c != 16<<20 {
		t.Errorf("buffer of %d bytes, want exactly the limit", c)
	}
}

// TestTailBlocks: across block boundaries, growth from a lone block to
// many, a limit that is not a multiple of the block, and wrapping, the
// tail keeps exactly the newest bytes.
func TestTailBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Writes are cut from random letters at random places: the text is
	// then the bytes themselves, and no two writes are alike.
	src := make([]byte, 2*tailBlock)
	for j := range src {
		src[j] = byte('a' + rng.IntN(26))
	}
	for _, limit := range []int{tailBlock - 1, tailBlock, tailBlock + 1, 3*tailBlock + 7, 4 * tailBlock} {
		tl := newTail(limit)
		var written []byte
		total := 0
		// 25 of the 30 writes average 48 KiB: 1.2 MiB in all, through
		// the largest ring (256 KiB) more than four times.
		for i := range 30 {
			n := rng.IntN(tailBlock + tailBlock/2)
			if i%7 == 0 {
				n = rng.IntN(16)
			}
			off := rng.IntN(len(src) - n + 1)
			p := src[off : off+n]
			tl.Write(p)
			total += n
			written = append(written, p...)
			checkTail(t, tl, written, limit)
			if tl.size > limit || len(tl.blocks) > 1 && tl.size < min(total, limit) {
				t.Fatalf("limit %d: a ring of %d bytes in %d blocks after %d bytes", limit, tl.size, len(tl.blocks), total)
			}
			// What the checks ask of the bytes before the newest limit+1
			// is only that there were more than the limit: keeping them
			// all made each check read everything written so far.
			if len(written) > limit+1 {
				written = append(written[:0:0], written[len(written)-limit-1:]...)
			}
		}
	}
}

func TestTailCutsAtCharacterStart(t *testing.T) {
	// "é" is C3 A9, "€" is E2 82 AC, "😀" is F0 9F 98 80.
	tests := []struct {
		name  string
		limit int
		in    string
		want  string
	}{
		{"cut inside 2-byte", 4, "aé€", "€"}, // keeps A9 E2 82 AC, skips A9
		{"cut at a start", 3, "aé€", "€"},    // keeps E2 82 AC
		{"cut inside 3-byte", 3, "€€x", "x"}, // keeps 82 AC 78, skips 82 AC
		{"cut after a lead", 5, "€€x", "€x"}, // keeps AC E2 82 AC 78, skips AC
		{"cut inside 4-byte", 5, "😀😀", "😀"},  // keeps 80 F0 9F 98 80
		{"cut leaves 3 continuation bytes", 3, "😀", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(tt.limit)
			tl.Write([]byte(tt.in))
			got, trunc := tl.Text(true)
			if got != tt.want {
				t.Errorf("Text = %q, want %q", got, tt.want)
			}
			if !trunc || !tl.Truncated() {
				t.Error("not truncated")
			}
		})
	}
}

func TestTailHoldsBackIncompleteCharacter(t *testing.T) {
	tl := newTail(100)
	tl.Write([]byte("a\xe2\x82"))
	if got, _ := tl.Text(false); got != "a" {
		t.Errorf("while running: %q, want %q", got, "a")
	}
	if got, _ := tl.Text(true); got != "a\uFFFD" {
		t.Errorf("after exit: %q, want %q", got, "a\uFFFD")
	}
	tl.Write([]byte("\xac"))
	if got, _ := tl.Text(false); got != "a€" {
		t.Errorf("completed: %q, want %q", got, "a€")
	}
}

func TestSanitizeMaximalSubparts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\xff", "\uFFFD"},
		{"a\xffb", "a\uFFFDb"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"\xe2\x82", "\uFFFD"},                 // truncated 3-byte: one subpart
		{"\xe2\x82x", "\uFFFDx"},               //
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated 4-byte
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: ED alone, then two strays
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong
		{"\xe0\x80\xaf", "\uFFFD\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
		{"\x80", "\uFFFD"},
		{"é€😀", "é€😀"},
	}
	for _, tt := range tests {
		if got := sanitize([]byte(tt.in)); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzTail checks the tail buffer's invariants for arbitrary data, limits
// and write chunkings.
func FuzzTail(f *testing.F) {
	f.Add([]byte("hello, world"), uint16(5), []byte{3, 1, 4})
	f.Add([]byte("aé€😀\xff\xe2\x82"), uint16(4), []byte{1})
	f.Add([]byte(strings.Repeat("€", 100)), uint16(7), []byte{2, 7, 1, 8})
	f.Add([]byte{}, uint16(0), []byte{})
	f.Add([]byte("x"), uint16(0), []byte{1})
	f.Add([]byte("\xed\xa0\x80\xc0\xaf"), uint16(3), []byte{5})
	f.Fuzz(func(t *testing.T, data []byte, limit16 uint16, cuts []byte) {
		limit := int(limit16 % 512)
		tl := newTail(limit)
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)]))
			}
			tl.Write(rest[:n])
			rest = rest[n:]
			if n == 0 && len(cuts) > 0 {
				tl.Write(rest[:1]) // a zero cut still makes progress
				rest = rest[1:]
			}
			// Cheap checks after every write, all of them now and then.
			written := len(data) - len(rest)
			if tl.Total() != uint64(written) || tl.Len() != min(written, limit) {
				t.Fatalf("after %d bytes: total %d, retained %d (limit %d)", written, tl.Total(), tl.Len(), limit)
			}
			if i%16 == 0 {
				checkTail(t, tl, data[:written], limit)
			}
		}
		checkTail(t, tl, data, limit)
	})
}

func checkTail(t *testing.T, tl *tail, written []byte, limit int) {
	t.Helper()
	raw := tl.Bytes()
	if len(raw) > limit {
		t.Fatalf("retained %d bytes, limit %d", len(raw), limit)
	}
	if !bytes.HasSuffix(written, raw) {
		t.Fatalf("retained %q is not a suffix of %q", raw, written)
	}
	if want := min(len(written), limit); len(raw) != want {
		t.Fatalf("retained %d bytes, want %d", len(raw), want)
	}
	if tl.Truncated() != (len(raw) < len(written)) {
		t.Fatalf("truncated=%v with %d of %d bytes retained", tl.Truncated(), len(raw), len(written))
	}
	for _, final := range []bool{false, true} {
		s, trunc := tl.Text(final)
		if !utf8.ValidString(s) {
			t.Fatalf("Text(%v) = %q is not valid UTF-8", final, s)
		}
		if utf8.Valid(raw) && !tl.Truncated() && final && s != string(raw) {
			t.Fatalf("valid input changed: %q -> %q", raw, s)
		}
		if len(s) > limit {
			t.Fatalf("Text(%v) has %d bytes, limit %d", final, len(s), limit)
		}
		// Without a loss the text is all of the output; with one, only
		// bytes dropped or text longer than the limit explain it.
		if full := sanitize(written); final && trunc != (tl.Truncated() || len(full) > limit) {
			t.Fatalf("Text(true) truncated=%v for %q (limit %d)", trunc, written, limit)
		}
		if final && !trunc && s != sanitize(written) {
			t.Fatalf("Text(true) = %q, not truncated, for %q", s, written)
		}
	}
}
