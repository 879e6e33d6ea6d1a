package textsafe

import "unicode/utf8"

// JSON escapes, in encoded JSON, the characters that encoding/json leaves
// raw but a terminal may act on or display out of order: DEL, C1 controls
// and bidirectional formatting characters become \u escapes. encoding/json
// already escapes C0 controls and U+2028/U+2029 and replaces invalid
// UTF-8. The escapes are JSON's own, so a program decoding the output gets
// exactly the same strings; only a person watching --format json on a
// terminal is spared. Outside strings JSON holds nothing but ASCII, so
// every match is inside a string.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r != '\n' && mustEscape(r) { // '\n' ends an NDJSON line
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r != '\n' && mustEscape(r) {
			out = append(out, '\\', 'u',
				hexDigits[(r>>12)&0xf], hexDigits[(r>>8)&0xf], hexDigits[(r>>4)&0xf], hexDigits[r&0xf])
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
