package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote returns s as one word of a POSIX shell command line that shows
// exactly what s is, for a permission prompt: s itself when it is made of
// characters no shell treats specially and does not start with '=' (which
// zsh expands); else s in single quotes; else, when s holds anything not
// printable (controls, C1, bidi and other formatting characters, invisible
// ones, invalid UTF-8), an ANSI-C quoted $'…' word in
// which those are escapes (\r, \x1b, \u202e) and a backslash is \\, so
// that no two different strings look alike and pasting the word into
// bash, zsh or any shell of POSIX.1-2024 gives s back.
func Quote(s string) string { return quote(s, false) }

// quote is Quote; first is for the first word of a command line, where a
// plain NAME=value would be read as an assignment, not as the command.
func quote(s string, first bool) string {
	if s == "" {
		return "''"
	}
	// A leading '=' is expanded by zsh to a command's path (=ls is /bin/ls).
	plain, printable := s[0] != '=' && !(first && isAssignment(s)), true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !showable(r) {
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
		case !showable(r):
			writeEscape(&b, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}

// showable reports whether r may appear as itself in a quoted word:
// printable, not a character Line escapes, and not one that shows as
// nothing although Go counts it printable — variation selectors, the
// Hangul fillers, the combining grapheme joiner — since "a b" and
// "a b\ufe0f" must not look alike in a permission prompt.
func showable(r rune) bool {
	return strconv.IsPrint(r) && !mustEscape(r) &&
		!unicode.Is(unicode.Variation_Selector, r) && !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// isAssignment reports whether a shell reads s, as the first word of a
// command, as a variable assignment: a name ([A-Za-z_][A-Za-z0-9_]*) and '='.
func isAssignment(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			return i > 0
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return false
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
// by spaces, and a first word NAME=value quoted too, since a shell would
// run the next word with NAME set. Read back by a shell, it is the same
// argv.
func QuoteArgs(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quote(w, i == 0))
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
