package textsafe

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// TestBidiMarks: LRM, RLM and ALM are bidirectional formatting characters
// (UAX #9 §2.6) like the overrides: one RLM before "1 2" makes a
// bidi-aware terminal show "2 1". Every function that escapes or drops
// the overrides must do the same with them.
func TestBidiMarks(t *testing.T) {
	const in = "version \u200f1 2 \u200e \u061c"
	const escaped = `version \u200f1 2 \u200e \u061c`
	if got := Line(in); got != escaped {
		t.Errorf("Line(%q) = %q, want %q", in, got, escaped)
	}
	if got := Text(in); got != escaped {
		t.Errorf("Text(%q) = %q, want %q", in, got, escaped)
	}
	if got := Log(in, true); got != escaped {
		t.Errorf("Log(%q, true) = %q, want %q", in, got, escaped)
	}
	if got, want := Strip([]byte(in)), "version 1 2  "; got != want {
		t.Errorf("Strip(%q) = %q, want %q", in, got, want)
	}
	if got, want := string(JSON([]byte(`"`+in+`"`))), `"`+escaped+`"`; got != want {
		t.Errorf("JSON(%q) = %q, want %q", in, got, want)
	}
}

// TestQuoteInvisible: characters Go counts as printable that show as
// nothing (variation selectors, the Hangul fillers) would make two
// different words look alike in a permission prompt.
func TestQuoteInvisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a b\ufe0f", `$'a b\ufe0f'`},
		{"/bin/ls\U000e0100", `$'/bin/ls\U000e0100'`},
		{"ls\u3164", `$'ls\u3164'`},
		{"x\u115f\u1160\uffa0\u034f\u180b", `$'x\u115f\u1160\uffa0\u034f\u180b'`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) (-want +got):\n-%s\n+%s", tt.in, tt.want, got)
		}
	}
}

// TestQuoteArgsAssignment: a first word NAME=value, unquoted, is read by
// a shell as a variable assignment for the command that follows, not as
// the command; a word starting with '=' is expanded by zsh to the path
// of a command (zshexpn, "= expansion").
func TestQuoteArgsAssignment(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"X=1", "printf", "%s", "hi"}, `'X=1' printf %s hi`},
		{[]string{"_a9=", "x"}, `'_a9=' x`},
		{[]string{"make", "CC=gcc"}, `make CC=gcc`}, // not in command position
		{[]string{"./X=1", "x"}, `./X=1 x`},         // not a name: a word
		{[]string{"=ls"}, `'=ls'`},                  // zsh: /bin/ls
		{[]string{"echo", "=ls"}, `echo '=ls'`},     // zsh: /bin/ls
		{[]string{"--opt=1", "a=b"}, `--opt=1 a=b`}, // not assignments
	}
	for _, tt := range tests {
		if got := QuoteArgs(tt.argv); got != tt.want {
			t.Errorf("QuoteArgs(%q) (-want +got):\n-%s\n+%s", tt.argv, tt.want, got)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	// Read back by bash, the line must try to run the program "X=1".
	out, err := exec.Command(bash, "-c", QuoteArgs([]string{"X=1", "printf", "%s", "ran printf"})).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "X=1: command not found") {
		t.Errorf("bash ran %s as %q (%v), not as the program X=1", QuoteArgs([]string{"X=1", "printf", "%s", "ran printf"}), out, err)
	}
}

// invisibleInQuote reports whether Quote must not leave r raw.
func invisibleInQuote(r rune) bool {
	return unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}
