package textsafe

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile is one string with every kind of trouble this package exists for.
const hostile = "a\x1b]52;c;aGk=\x07b\x1b]0;title\x1b\\c\x1b[1A\x1b[2Kd\re\x00f\x07g\u009b2Kh\u202eevil\u202ci\x1bP1$r\x1b\\j\xff\x7fk\u2028l"

func TestLineText(t *testing.T) {
	tests := []struct {
		in, line, text string
	}{
		{"plain ascii", "plain ascii", "plain ascii"},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{"two\nlines", `two\nlines`, "two\nlines"},
		{"crlf\r\nnext", `crlf\r\nnext`, "crlf\nnext"},
		{"cr\rover", `cr\rover`, `cr\rover`},
		{"tab\there", `tab\there`, "tab\there"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"osc52 \x1b]52;c;aGk=\x07", `osc52 \x1b]52;c;aGk=\x07`, `osc52 \x1b]52;c;aGk=\x07`},
		{"nul\x00del\x7f", `nul\x00del\x7f`, `nul\x00del\x7f`},
		{"c1 \u0085 \u009b2K", `c1 \u0085 \u009b2K`, `c1 \u0085 \u009b2K`},
		{"bidi \u202eabc\u202c \u2066x\u2069", `bidi \u202eabc\u202c \u2066x\u2069`, `bidi \u202eabc\u202c \u2066x\u2069`},
		{"sep\u2028par\u2029", `sep\u2028par\u2029`, `sep\u2028par\u2029`},
		{"bad \xff \xe2\x82 utf8", "bad \uFFFD \uFFFD\uFFFD utf8", "bad \uFFFD \uFFFD\uFFFD utf8"},
		{"backslash \\x1b stays", `backslash \x1b stays`, `backslash \x1b stays`},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) (-want +got):\n-%q\n+%q", tt.in, tt.line, got)
		}
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) (-want +got):\n-%q\n+%q", tt.in, tt.text, got)
		}
	}
}

func TestLog(t *testing.T) {
	tests := []struct {
		in, tty, plain string
	}{
		{"plain", "plain", "plain"},
		{"\x1b[31mred\x1b[0m ok", "\x1b[31mred\x1b[0m ok\x1b[0m", "red ok"},
		{"\x1b[38;2;1;2;3mrgb", "\x1b[38;2;1;2;3mrgb\x1b[0m", "rgb"},
		{"\x1b[8mhidden", "\x1b[8mhidden\x1b[0m", "hidden"},
		{"up\x1b[1A\x1b[2Kx", `up\x1b[1A\x1b[2Kx`, `up\x1b[1A\x1b[2Kx`},
		{"\x1b]0;t\x07", `\x1b]0;t\x07`, `\x1b]0;t\x07`},
		{"c1 sgr \u009b31m", `c1 sgr \u009b31m`, `c1 sgr \u009b31m`},
		{"\x1b[31", `\x1b[31`, `\x1b[31`},
		{"\x1b[?25l", `\x1b[?25l`, `\x1b[?25l`},
		{"cr\rnul\x00", `cr\rnul\x00`, `cr\rnul\x00`},
		{"\u202e\xff", `\u202e` + "\uFFFD", `\u202e` + "\uFFFD"},
	}
	for _, tt := range tests {
		if got := Log(tt.in, true); got != tt.tty {
			t.Errorf("Log(%q, true) (-want +got):\n-%q\n+%q", tt.in, tt.tty, got)
		}
		if got := Log(tt.in, false); got != tt.plain {
			t.Errorf("Log(%q, false) (-want +got):\n-%q\n+%q", tt.in, tt.plain, got)
		}
	}
}

func TestStrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[1;31mred\x1b[0m text", "red text"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bP1$r\x1b\\dcs", "dcs"},
		{"\x1b(Bcharset \x1b7saved", "charset saved"},
		{"\x1bé", "é"},
		{"a\tb", "a       b"},
		{"ab\tc", "ab      c"},
		{"日\tx", "日       x"},
		{"bell\x07 nul\x00 del\x7f cr\r", "bell nul del cr"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"c1 \u0085 \u009b", "c1  "},
		{"bidi \u202eabc\u202c", "bidi abc"},
		{"unfinished \x1b[31", "unfinished "},
		{"unfinished osc \x1b]0;ti", "unfinished osc "},
	}
	for _, tt := range tests {
		if got := Strip([]byte(tt.in)); got != tt.want {
			t.Errorf("Strip(%q) (-want +got):\n-%q\n+%q", tt.in, tt.want, got)
		}
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"ls", "ls"},
		{"/usr/bin/a-b_c.d=e:f,g+h@i%j", "/usr/bin/a-b_c.d=e:f,g+h@i%j"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{`$HOME "x" *`, `'$HOME "x" *'`},
		{"héllo", "'héllo'"},
		{"a\nb", `$'a\nb'`},
		{"echo REAL #\r\x1b[2Kacpterm: ls -la", `$'echo REAL #\r\x1b[2Kacpterm: ls -la'`},
		{"it's\t\\x", `$'it\'s\t\\x'`},
		{"\u009b\u202e\u200b\u00a0", `$'\u009b\u202e\u200b\u00a0'`},
		{"bad\xff\xe2\x82", `$'bad\xff\xe2\x82'`},
		{"\U000e0001 tag", `$'\U000e0001 tag'`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) (-want +got):\n-%s\n+%s", tt.in, tt.want, got)
		}
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		command string
		args    []string
		want    string
	}{
		{"make test 2>&1 | tail", nil, "make test 2>&1 | tail"}, // a shell line, as written
		{"make", []string{}, "make"},
		{"go", []string{"test", "./..."}, "go test ./..."},
		{"printf", []string{`%s\n`, "a b"}, `printf '%s\n' 'a b'`},
		{"my tool", []string{"x\ny"}, `'my tool' $'x\ny'`},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.command, tt.args); got != tt.want {
			t.Errorf("CommandLine(%q, %q) (-want +got):\n-%s\n+%s", tt.command, tt.args, tt.want, got)
		}
	}
}

// TestQuoteRoundTrip feeds Quote's words to bash, the shell whose $'…'
// the format follows: each must come back as exactly the bytes it quotes.
// NUL is left out: no argv can hold one, and neither can a bash string.
func TestQuoteRoundTrip(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	ins := []string{"ls", "two words", "it's", "a\nb\tc\\d'e\"", strings.ReplaceAll(hostile, "\x00", ""), "\x01\x1f\x7f", "\u0080\u009f\u202a\u2069\u2028", "bad\xff\xc0\xe2\x82", "\U000e0001", "=ls", "a b\ufe0f\u3164\u200f"}
	for _, in := range ins {
		cmd := exec.Command(bash, "-c", "printf %s "+Quote(in))
		cmd.Env = []string{"LC_ALL=C.UTF-8"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash on %s: %v", Quote(in), err)
		}
		if string(out) != in {
			t.Errorf("bash read %s back (-want +got):\n-%q\n+%q", Quote(in), in, out)
		}
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"k": hostile + "\u0080\u2069 ok ✓"}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	enc = append(enc, '\n')
	got := JSON(enc)
	for _, c := range []string{"\x7f", "\u0080", "\u009b", "\u202e", "\u2069"} {
		if bytes.Contains(got, []byte(c)) {
			t.Errorf("%q left raw in %s", c, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if want := strings.ToValidUTF8(v["k"], "\uFFFD"); back["k"] != want {
		t.Errorf("decoded (-want +got):\n-%q\n+%q", want, back["k"])
	}
	if plain := []byte(`{"a":"b ✓"}` + "\n"); !bytes.Equal(JSON(plain), plain) {
		t.Errorf("JSON changed %s", plain)
	}
}

// checkSafe fails unless s is valid UTF-8 free of every character a
// terminal could act on: C0 other than the allowed ones, DEL, C1, bidi
// formatting (every Bidi_Control character, marks included, whatever
// mustEscape says) and line separators.
func checkSafe(t *testing.T, fn, s string, allowed string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s: invalid UTF-8 %q", fn, s)
	}
	for _, r := range s {
		if strings.ContainsRune(allowed, r) {
			continue
		}
		if mustEscape(r) || unicode.Is(unicode.Bidi_Control, r) {
			t.Fatalf("%s: %U in %q", fn, r, s)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add(hostile)
	f.Add("\x1b[31mred\x1b[0m\r\n\t")
	f.Add("\xe2\x82\x1b[\u009b\x1b")
	f.Add("\u200f1 2\u061c\ufe0f\u3164")
	f.Fuzz(func(t *testing.T, s string) {
		checkSafe(t, "Line", Line(s), "")
		checkSafe(t, "Text", Text(s), "\n\t")
		checkSafe(t, "Log(false)", Log(s, false), "")
		checkSafe(t, "Strip", Strip([]byte(s)), "")
		q := Quote(s)
		checkSafe(t, "Quote", q, "")
		for _, r := range q {
			if !(r >= 0x20 && r < 0x7f) && !strings.ContainsRune(s, r) {
				t.Fatalf("Quote(%q) = %q: %U is not from the input", s, q, r)
			}
			if invisibleInQuote(r) {
				t.Fatalf("Quote(%q) = %q: invisible %U left raw", s, q, r)
			}
		}
		// With SGR kept, the only ESC left starts an SGR sequence.
		tty := Log(s, true)
		checkSafe(t, "Log(true)", strings.ReplaceAll(tty, "\x1b", ""), "")
		for i := 0; i < len(tty); i++ {
			if tty[i] == 0x1b && sgrLen(tty[i:]) == 0 {
				t.Fatalf("Log(%q, true) = %q: ESC at %d starts no SGR", s, tty, i)
			}
		}
		if strings.Contains(tty, "\x1b") && !strings.HasSuffix(tty, "\x1b[0m") {
			t.Fatalf("Log(%q, true) = %q: no reset at the end", s, tty)
		}
		// JSON: what encoding/json makes of s, with nothing raw left.
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		js := JSON(enc)
		checkSafe(t, "JSON", string(js), "")
		var back string
		if err := json.Unmarshal(js, &back); err != nil || !jsonReplacedSame(s, back) {
			t.Fatalf("JSON(%q) decodes to %q (%v)", enc, back, err)
		}
	})
}

// jsonReplacedSame reports whether back is s with invalid bytes replaced
// the way encoding/json does it: one U+FFFD per invalid byte.
func jsonReplacedSame(s, back string) bool {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String() == back
}
