package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// An internal test: the hand-written encoder of terminal_output lines
// (appendTerminalOutput) is held byte for byte to encoding/json on any
// input, fuzzed. Through the renderer, the incomplete character it
// carries from one chunk to the next would hide how any input ends.

// referenceOutput is a terminal_output line as emit writes it.
func referenceOutput(t testing.TB, id acp.TerminalID, p []byte, dropped uint64) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonTerminalOutput{Event: "terminal_output", TerminalID: id,
		Data: strings.ToValidUTF8(string(p), "\uFFFD"), Dropped: dropped}); err != nil {
		t.Fatal(err)
	}
	return string(textsafe.JSON(buf.Bytes()))
}

func checkOutputLine(t *testing.T, id acp.TerminalID, p []byte, dropped uint64) {
	t.Helper()
	line, _ := appendTerminalOutput(nil, outputPrefix(id), p, dropped, false)
	got := string(line)
	if want := referenceOutput(t, id, p, dropped); got != want {
		t.Fatalf("terminal_output of %q:\n got %q\nwant %q", p, got, want)
	}
}

// TestAppendJSONOutput: the hand-written terminal_output line is what
// encoding/json and textsafe make of the same event.
func TestAppendJSONOutput(t *testing.T) {
	for _, s := range []string{
		"", "plain text\n", "tab\tcr\r\nbs\b ff\f nul\x00 esc\x1b[31m del\x7f",
		`quote " backslash \ <html> & amp`,
		"€ \xe2\x82 \xff\xfe mixed \xed\xa0\x80 \xc0\xaf end\xe2",
		"c1 \u0085 \u009b bidi \u202e\u2066\u2069 marks \u200e\u200f\u061c sep \u2028\u2029 bom \ufeff fffd \ufffd",
		"emoji 😀 and \xf0\x9f\x98",
	} {
		checkOutputLine(t, "term_1", []byte(s), 0)
		checkOutputLine(t, "id \"<&>\u202e\x01", []byte(s), 42)
	}
}

// TestAppendJSONOutputWords: a byte that needs a look is found wherever
// it sits in the words plainWords reads at a time.
func TestAppendJSONOutputWords(t *testing.T) {
	for _, c := range []byte{0x00, 0x1f, 0x20, '"', '\\', 0x7e, 0x7f, 0x80, 0xc2, 0xff} {
		for i := range 18 {
			p := bytes.Repeat([]byte("a"), 18)
			p[i] = c
			checkOutputLine(t, "term_1", p, 0)
		}
	}
}

func FuzzAppendJSONOutput(f *testing.F) {
	f.Add([]byte("a\xe2\x82\xacb\xff\u202e\x7f\x00"), "term_1", uint64(0))
	f.Fuzz(func(t *testing.T, p []byte, id string, dropped uint64) {
		checkOutputLine(t, acp.TerminalID(id), p, dropped)
	})
}
