// Package textsafe makes text that an agent controls safe to print on a
// terminal. It is the one sanitizer of acpterm: every renderer and prompt
// passes agent-controlled text through it, so that only acpterm's own
// styling ever reaches the screen as an escape sequence.
//
// A terminal acts on bytes, not on what they look like: ESC starts a
// sequence that can move the cursor, erase what acpterm printed before,
// set the window title (OSC 0) or the clipboard (OSC 52); a carriage
// return lets later text overwrite earlier text on the same line; C1
// controls (U+0080–U+009F, e.g. U+009B, a one-character CSI) do the same
// on terminals that honour them; bidirectional overrides make a line read
// in another order than the one it runs in. The functions here turn all of
// these into visible escapes (\x1b, \r, \u009b, \u202e) or drop them; none
// is ever passed through, except SGR colours in Log when asked.
//
// Invalid UTF-8 becomes U+FFFD, one per invalid byte. A backslash is left
// as it is, so the text of a message stays readable: "\x1b" in the output
// may be an ESC or those four characters. Where the difference matters —
// the command a permission prompt shows — Quote is exact.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Line returns s as one line of display text: every control character
// (newlines and tabs included), DEL, C1 control, bidirectional formatting
// character and line or paragraph separator becomes a visible escape. For
// titles, paths, commands, kinds: anything printed inside a line of
// acpterm's own.
func Line(s string) string { return escape(s, false) }

// Text is Line for text that is shown as lines: a message, a thought,
// the text content of a tool call. Newlines and tabs are kept (a tab
// cannot move the cursor anywhere a space could not), and a CR right
// before a newline is dropped; everything else Line escapes is escaped.
func Text(s string) string { return escape(s, true) }

// mustEscape reports whether Line escapes r.
func mustEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // bidi marks: one RLM shows "1 2" as "2 1"
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// safeASCII reports whether s is printable ASCII only, the common case
// that every function here returns unchanged without allocating.
func safeASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func escape(s string, multiline bool) string {
	if safeASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case multiline && r == '\r' && i < len(s) && s[i] == '\n':
			// CRLF: a line break like LF alone.
		case mustEscape(r):
			writeEscape(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

// writeEscape writes the Go-style escape of a character that must not be
// printed: \n, \r, \t for the three that everybody reads, \xHH for the
// rest of C0 and DEL, \uHHHH above.
func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		if r < 0x80 {
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
			return
		}
		if r > 0xffff {
			b.WriteString(`\U`)
			for shift := 28; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[(r>>shift)&0xf])
			}
			return
		}
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hexDigits[(r>>shift)&0xf])
		}
	}
}
