package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Log returns one line of a program's log (the agent's stderr) safe to
// print: like Line, except that SGR sequences (ESC [ params m: colours,
// bold) are kept when keepSGR — the line goes to a colour terminal — and
// dropped otherwise. A line that kept any ends with a reset, so that a
// colour, or concealed text, never spills into what acpterm prints next.
// Every other escape sequence is made visible, never interpreted.
func Log(s string, keepSGR bool) string {
	if safeASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	styled := false
	for i := 0; i < len(s); {
		if n := sgrLen(s[i:]); n > 0 {
			if keepSGR {
				b.WriteString(s[i : i+n])
				styled = true
			}
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case mustEscape(r):
			writeEscape(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	if styled {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

// sgrLen is the length of the SGR sequence at the start of s, or 0: ESC,
// '[', parameters (digits, ';' and the ':' of sub-parameters), 'm'. Only
// this 7-bit form counts; a C1 CSI (U+009B) is escaped like any C1.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// Strip returns raw command output, one line of it, as display text:
// escape sequences (colours, cursor moves, titles) are dropped whole,
// other control characters, C1 controls and bidirectional formatting
// characters are dropped, tabs become spaces up to the next multiple of 8
// columns, and invalid UTF-8 becomes U+FFFD. Unlike agent text, which is
// escaped, a command's output is shown as the command meant it to look
// (its colours and progress bars lost), since the agent reads the same
// bytes and nothing is hidden from the user that the agent sees.
func Strip(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	col := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i += escapeLen(b[i:])
			continue
		case c == '\t':
			n := 8 - col%8
			sb.WriteString("        "[:n])
			col += n
			i++
			continue
		case c < 0x20 || c == 0x7f:
			i++
			continue
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			col++
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if size > 1 && mustEscape(r) {
			continue
		}
		sb.WriteRune(r) // utf8.RuneError for an invalid byte
		col++
	}
	return sb.String()
}

// escapeLen is the length of the escape sequence at the start of b, which
// starts with ESC (ECMA-48 §5.3–5.6): a CSI up to its final byte; an OSC,
// DCS, APC, PM or SOS string up to BEL or ST; else ESC, any intermediate
// bytes and a final byte (ESC ( B, ESC 7). An unfinished sequence runs to
// the end of b: its rest is what a terminal would have swallowed too.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return len(b)
	}
	switch b[1] {
	case '[':
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1
			}
		}
		return len(b)
	case ']', 'P', '_', '^', 'X':
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return len(b)
	}
	i := 1
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f { // intermediate bytes
		i++
	}
	if i < len(b) && b[i] >= 0x30 && b[i] <= 0x7e {
		i++
	}
	return i // at least the ESC; a byte that cannot follow it is kept
}
