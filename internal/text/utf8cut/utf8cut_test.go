package utf8cut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// "é" is C3 A9, "€" is E2 82 AC, "😀" is F0 9F 98 80.

// cutCase is one call of Head or Tail.
type cutCase struct {
	s    string
	n    int
	want string
}

// testCut runs cut on each case, on a string and on a byte slice.
func testCut(t *testing.T, name string, cut func(string, int) string, cutBytes func([]byte, int) []byte, tests []cutCase) {
	t.Helper()
	for _, tt := range tests {
		if got := cut(tt.s, tt.n); got != tt.want {
			t.Errorf("%s(%q, %d) = %q, want %q", name, tt.s, tt.n, got, tt.want)
		}
		if got := cutBytes([]byte(tt.s), tt.n); string(got) != tt.want {
			t.Errorf("%s([]byte(%q), %d) = %q, want %q", name, tt.s, tt.n, got, tt.want)
		}
	}
}

func TestHead(t *testing.T) {
	testCut(t, "Head", Head[string], Head[[]byte], []cutCase{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abc", 10, "abc"},
		{"abcdef", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},                      // cut inside é
		{"aé", 3, "aé"},                     // fits
		{"a€b", 3, "a"},                     // two of €'s three bytes fit
		{"a€b", 4, "a€"},                    // exactly
		{"😀x", 3, ""},                       // no room for the first character
		{"a😀", 4, "a"},                      // cut after its third byte
		{"\x80\x80\x80\x80\x80", 4, "\x80"}, // not UTF-8: backs up three bytes at most
		{"a\xffb", 2, "a\xff"},              // an invalid byte is a start like any other
	})
}

func TestTail(t *testing.T) {
	testCut(t, "Tail", Tail[string], Tail[[]byte], []cutCase{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcdef", 3, "def"},
		{"abc", 0, ""},
		{"abc", -2, ""},
		{"éa", 2, "a"},                      // the cut keeps é's second byte only
		{"éa", 3, "éa"},                     // fits
		{"b€a", 3, "a"},                     // two of €'s bytes would be kept
		{"b€a", 4, "€a"},                    // exactly
		{"x😀", 3, ""},                       // no room for the last character
		{"\x80\x80\x80\x80\x80", 4, "\x80"}, // not UTF-8: skips three bytes at most
	})
}

func TestTrimStart(t *testing.T) {
	tests := []struct{ s, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\xa9a", "a"},                 // the end of é
		{"\x82\xaca", "a"},             // the end of €
		{"\x9f\x98\x80a", "a"},         // the end of 😀
		{"\x80\x80\x80\x80a", "\x80a"}, // more than a character's worth: three at most
		{"\xa9", ""},
	}
	for _, tt := range tests {
		if got := TrimStart(tt.s); got != tt.want {
			t.Errorf("TrimStart(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestIncompleteSuffix(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"aé", 0},
		{"a\xc3", 1},         // é's first byte
		{"a\xe2", 1},         // €'s first byte
		{"a\xe2\x82", 2},     // two of €'s three
		{"a\xf0\x9f\x98", 3}, // three of 😀's four
		{"a😀", 0},
		{"a\xe0\x80", 0},    // E0 80 can never be valid (overlong)
		{"a\xed\xa0", 0},    // a surrogate
		{"a\xf4\x90", 0},    // above U+10FFFF
		{"a\xff", 0},        // never valid
		{"a\x80", 0},        // a lone continuation byte
		{"\x80\x80\x80", 0}, // no start within reach
		{"\xe2\x82\xac\x82", 0},
	}
	for _, tt := range tests {
		if got := IncompleteSuffix(tt.s); got != tt.want {
			t.Errorf("IncompleteSuffix(%q) = %d, want %d", tt.s, got, tt.want)
		}
		if got := IncompleteSuffix([]byte(tt.s)); got != tt.want {
			t.Errorf("IncompleteSuffix([]byte(%q)) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// TestIncompleteSuffixEveryPrefix cuts every character of a text at
// every byte: each cut inside a character leaves exactly that many bytes
// unfinished.
func TestIncompleteSuffixEveryPrefix(t *testing.T) {
	const text = "aé€😀\u07ff\uffff\U0010ffff"
	for i := 0; i <= len(text); i++ {
		start := i // of the character byte i belongs to
		for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
			start--
		}
		want := i - start
		if got := IncompleteSuffix(text[:i]); got != want {
			t.Errorf("IncompleteSuffix(%q) = %d, want %d", text[:i], got, want)
		}
	}
}

// checkCut checks the invariants of a cut of s to n bytes: got is the
// part of s that part says (a prefix or a suffix), within the limit, at
// most a character's bytes short of it, and valid UTF-8 if s is.
func checkCut(t *testing.T, name, s string, n int, got string, part func(s, p string) bool) {
	t.Helper()
	bound := max(n, 0)
	switch {
	case !part(s, got) || len(got) > bound:
		t.Fatalf("%s(%q, %d) = %q: not a part of s within the limit", name, s, n, got)
	case len(s) > bound && len(got) < bound-(utf8.UTFMax-1):
		t.Fatalf("%s(%q, %d) = %q: cut more than a character", name, s, n, got)
	case utf8.ValidString(s) && !utf8.ValidString(got):
		t.Fatalf("%s(%q, %d) = %q: not valid UTF-8", name, s, n, got)
	}
}

func FuzzCut(f *testing.F) {
	f.Add("aé€😀", 3)
	f.Add("\x80\x80\x80\x80", 2)
	f.Add("a\xe2\x82", 1)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkCut(t, "Head", s, n, Head(s, n), strings.HasPrefix)
		checkCut(t, "Tail", s, n, Tail(s, n), strings.HasSuffix)

		k := IncompleteSuffix(s)
		switch {
		case k < 0 || k >= utf8.UTFMax || k > len(s):
			t.Fatalf("IncompleteSuffix(%q) = %d", s, k)
		case utf8.ValidString(s) && k != 0:
			t.Fatalf("IncompleteSuffix(%q) = %d for valid UTF-8", s, k)
		case k > 0 && (utf8.FullRuneInString(s[len(s)-k:]) || !utf8.RuneStart(s[len(s)-k])):
			t.Fatalf("IncompleteSuffix(%q) = %d: %q is not an unfinished character", s, k, s[len(s)-k:])
		}
		if utf8.ValidString(s) {
			// Cutting a valid text anywhere leaves an unfinished
			// character of exactly the bytes after the last start.
			cut := Head(s, n)
			rest := s[len(cut):min(len(s), max(n, 0))]
			if got := IncompleteSuffix(cut + rest); got != len(rest) {
				t.Fatalf("IncompleteSuffix(%q) = %d, want %d", cut+rest, got, len(rest))
			}
		}
	})
}
