// Package utf8cut cuts text to a byte budget without splitting a
// character: the first or last n bytes of a text, and the unfinished
// character at the end of a stream read so far.
//
// The functions take a string or a byte slice and return the same type,
// a subslice of their argument. They look at most utf8.UTFMax-1 bytes past
// the cut, so text that is not UTF-8 costs no more than text that is; for
// valid UTF-8 the result is valid UTF-8.
package utf8cut

import "unicode/utf8"

// Text is what the functions cut.
type Text interface{ ~string | ~[]byte }

// Head returns the longest prefix of s of at most n bytes that does not
// end inside a character: s itself when it fits, else s[:n] less the
// first bytes of a character that s[n] continues.
func Head[T Text](s T, n int) T {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for j := 0; j < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); j++ {
		n--
	}
	return s[:n]
}

// Tail returns the longest suffix of s of at most n bytes that starts at
// a character: s itself when it fits, else the last n bytes less the rest
// of a character whose start was cut off.
func Tail[T Text](s T, n int) T {
	if len(s) <= n {
		return s
	}
	return TrimStart(s[len(s)-max(n, 0):])
}

// TrimStart drops the continuation bytes at the start of s, at most
// utf8.UTFMax-1 of them: the rest of a character whose start was cut off
// when s was taken from the end of a longer text.
func TrimStart[T Text](s T) T {
	for j := 0; j < utf8.UTFMax-1 && len(s) > 0 && !utf8.RuneStart(s[0]); j++ {
		s = s[1:]
	}
	return s
}

// IncompleteSuffix is the length of the unfinished character at the end
// of s: a lead byte followed by fewer continuation bytes than it
// announces, all of them still valid, so that the next bytes of a stream
// may complete it. It is 0 when s ends with a whole character or with
// bytes that no continuation can make valid.
func IncompleteSuffix[T Text](s T) int {
	for k := 1; k < utf8.UTFMax && k <= len(s); k++ {
		if !utf8.RuneStart(s[len(s)-k]) {
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[len(s)-k:])
		if utf8.FullRune(buf[:n]) {
			return 0
		}
		return k
	}
	return 0
}
