package terminal

import (
	"strings"
	"unicode/utf8"
)

// sanitize returns b as a string with every invalid UTF-8 sequence replaced
// by U+FFFD, one replacement per maximal subpart: a lead byte together with
// the continuation bytes that still fit a valid character, or else a single
// byte (Unicode §3.9, "U+FFFD Substitution of Maximal Subparts"). This is
// what Rust's String::from_utf8_lossy, Python's "replace" handler and the
// WHATWG TextDecoder used by TypeScript agents produce, so "\xe2\x82" (a
// truncated "€") is one U+FFFD, "\xff" is one, and "\xed\xa0\x80" (a
// surrogate) is three. strings.ToValidUTF8 differs: it collapses a whole
// run of invalid bytes into one replacement.
func sanitize(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	start := 0 // start of the pending run of valid bytes
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		n, p := seqLen(c), validPrefix(b[i:])
		if n > 0 && p == n {
			i += n
			continue
		}
		sb.Write(b[start:i])
		sb.WriteString(string(utf8.RuneError))
		i += max(p, 1)
		start = i
	}
	sb.Write(b[start:])
	return sb.String()
}

// seqLen is the length a lead byte announces: 2, 3 or 4, or 0 for a byte
// that cannot start a multi-byte character (continuation bytes, C0, C1,
// F5–FF).
func seqLen(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}

// validPrefix is how many bytes at the start of b (a multi-byte lead byte
// first) belong to a well-formed character: the lead and the continuation
// bytes that fit, up to the announced length. 0 when b[0] is not a lead.
func validPrefix(b []byte) int {
	n := seqLen(b[0])
	if n == 0 {
		return 0
	}
	lo, hi := byte(0x80), byte(0xBF) // range allowed for the second byte
	switch b[0] {
	case 0xE0:
		lo = 0xA0 // no overlong 3-byte forms
	case 0xED:
		hi = 0x9F // no surrogates
	case 0xF0:
		lo = 0x90 // no overlong 4-byte forms
	case 0xF4:
		hi = 0x8F // nothing above U+10FFFF
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
