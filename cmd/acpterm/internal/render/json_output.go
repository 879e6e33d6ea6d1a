package render

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// The terminal_output event carries most of what --format json writes,
// often hundreds of megabytes, so it is encoded by hand in one pass over
// the command's bytes into a reused buffer. The result is byte for byte
// what emit makes of the same event (encoding/json without HTML escaping,
// of the text with each run of invalid UTF-8 replaced by one U+FFFD, then
// textsafe.JSON); TestAppendJSONOutput checks that.

// jsonTextEscape marks the ASCII bytes a JSON string cannot hold raw or
// that textsafe.JSON escapes (C0 controls, '"', '\\', DEL), and every byte
// from 0x80, which starts a multi-byte character to look at.
var jsonTextEscape = func() (t [256]bool) {
	for i := range 0x20 {
		t[i] = true
	}
	t['"'], t['\\'], t[0x7f] = true, true, true
	for i := 0x80; i < 0x100; i++ {
		t[i] = true
	}
	return t
}()

// appendJSONText appends the contents of a JSON string (without quotes)
// holding text: p with each run of invalid UTF-8 replaced by one U+FFFD,
// escaped as encoding/json and textsafe.JSON escape it. invalid says that
// the text p continues (the terminal's earlier output) ended in invalid
// UTF-8, already replaced: a run that goes on into p is the same run, so
// that where the output was cut into events does not change the text.
// It returns the same for the end of p.
func appendJSONText(dst, p []byte, invalid bool) ([]byte, bool) {
	start := 0
	for i := 0; i < len(p); {
		c := p[i]
		if !jsonTextEscape[c] {
			i += plainWords(p[i:])
			for i < len(p) && !jsonTextEscape[p[i]] {
				i++
			}
			invalid = false
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, p[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other C0 controls and DEL
				dst = appendUnicodeEscape(dst, rune(c))
			}
			i++
			start, invalid = i, false
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, p[start:i]...)
			if !invalid {
				dst = append(dst, "\uFFFD"...)
			}
			i++
			start, invalid = i, true
			continue
		case r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c,
			r == 0x2028, r == 0x2029:
			// C1 controls, bidirectional formatting and marks, line and
			// paragraph separators.
			dst = append(dst, p[start:i]...)
			dst = appendUnicodeEscape(dst, r)
			start = i + size
		}
		i += size
		invalid = false
	}
	return append(dst, p[start:]...), invalid
}

// plainWords returns the length of the longest prefix of p, in whole
// 8-byte words, that holds no byte jsonTextEscape marks. It looks at a
// word at a time, which makes plain text several times faster to encode
// than a table lookup per byte.
func plainWords(p []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	n := 0
	for ; n+8 <= len(p); n += 8 {
		x := binary.LittleEndian.Uint64(p[n:])
		// A byte from 0x80, a byte below 0x20, or a byte equal to '"',
		// '\\' or DEL (a zero byte after the XOR): each test sets the
		// high bit of some byte exactly when the word has such a byte.
		q, b, d := x^('"'*ones), x^('\\'*ones), x^(0x7f*ones)
		if (x|(x-0x20*ones)&^x|(q-ones)&^q|(b-ones)&^b|(d-ones)&^d)&highs != 0 {
			break
		}
	}
	return n
}

// appendUnicodeEscape appends r (below U+10000) as \uXXXX.
func appendUnicodeEscape(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', hex[(r>>12)&0xf], hex[(r>>8)&0xf], hex[(r>>4)&0xf], hex[r&0xf])
}

// appendTerminalOutput appends a terminal_output event line, given the
// encoded start of it for the terminal (outputPrefix). invalid is as for
// appendJSONText, and so is the state returned.
func appendTerminalOutput(dst []byte, prefix string, text []byte, dropped uint64, invalid bool) ([]byte, bool) {
	dst = append(dst, prefix...)
	dst, invalid = appendJSONText(dst, text, invalid)
	dst = append(dst, '"')
	if dropped > 0 {
		dst = append(dst, `,"dropped":`...)
		dst = strconv.AppendUint(dst, dropped, 10)
	}
	return append(dst, "}\n"...), invalid
}
