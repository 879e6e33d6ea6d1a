package textsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Quote returns s as one word of a POSIX shell command line that shows
// exactly what s is, for a permission prompt: s itself when it is made of
// characters no shell treats specially; else s in single quotes; else,
// when s holds anything not printable (controls, C1, bidi and other
// formatting characters, invalid UTF-8), an ANSI-C quoted $'…' word in
// which those are escapes (\r, \x1b, \u202e) and a backslash is \\, so
// that no two different strings look alike and pasting the word into
// bash, zsh or any shell of POSIX.1-2024 gives s back.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	plain, printable := true, true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !strconv.IsPrint(r) || mustEscape(r) {
			printable = false
			break
		}
		if !isPlain(r) {
			plain = false
		}
		i += size
	}
	switch {
	case plain && printable:
		return s
	case printable:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// The byte itself: $'\xff' is that byte again.
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case !strconv.IsPrint(r) || mustEscape(r):
			writeEscape(&b, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}

// isPlain reports whether r can appear unquoted in a shell word and still
// mean itself.
func isPlain(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-_./=:,+@%", r)
}

// QuoteArgs is an argv as a shell command line: each word Quote'd, joined
// by spaces. Read back by a shell, it is the same argv.
func QuoteArgs(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(w))
	}
	return b.String()
}

// CommandLine is how acpterm shows a terminal's command: a shell line (no
// args) as it is, since a shell reads it as written; an argv with each
// word quoted (QuoteArgs), so that "a b" shows as one word. A shell line
// is the agent's text: print it through Line.
func CommandLine(command string, args []string) string {
	if len(args) == 0 {
		return command
	}
	return QuoteArgs(append([]string{command}, args...))
}
