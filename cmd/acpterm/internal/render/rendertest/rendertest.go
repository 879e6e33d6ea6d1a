// Package rendertest holds what the tests of acpterm's output share: a
// string carrying every escape an agent may try on a screen, a check that
// only acpterm's own escapes reached it, a clock that moves only when told
// to, and the reader of recorded wire transcripts (testdata/*/*.wire).
//
// It imports nothing of acpterm, so that the internal tests of the
// packages it serves (render's among them) can use it too.
package rendertest

import (
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Evil carries every kind of escape an agent may try on the screen: OSC 52
// (clipboard), OSC 0 (title), cursor up and erase line, CR, NUL, BEL, a C1
// CSI, a bidi override, DCS, DEL and invalid UTF-8.
const Evil = "<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\\x7f\xff>"

// ownEscape is every escape sequence the text renderer writes itself: SGR
// (render.Style) and the live region's cursor-up, CR, erase-below.
var ownEscape = regexp.MustCompile(`\x1b\[[0-9;]*m|\x1b\[[0-9]+A\r\x1b\[J`)

// Plain is out without the escape sequences acpterm writes itself.
func Plain(out string) string { return ownEscape.ReplaceAllString(out, "") }

// ScreenOffence returns the first thing in out that a terminal would act
// on and that acpterm did not mean to write, or "" if there is none.
func ScreenOffence(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	for _, r := range Plain(out) {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			return "control " + strings.TrimPrefix(strings.TrimSuffix(jsonQuote(string(r)), `"`), `"`)
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return "bidi control " + jsonQuote(string(r))
		}
	}
	return ""
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Clock is a clock that moves only when told to; its Now is a
// render.Clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock set to a fixed time.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ReadWire splits a wire file into its sections. A wire file is a txtar
// archive: comment lines, then sections each headed by a line
// "-- NAME --" ("-- wire --": the recorded messages, one a line; the
// others what a test expects of them). Each section's text ends in
// exactly one newline.
func ReadWire(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	name := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(n, " --") {
			name = strings.TrimSuffix(n, " --")
			continue
		}
		if name == "" {
			continue
		}
		sections[name] += line + "\n"
	}
	for k, v := range sections {
		sections[k] = strings.TrimRight(v, "\n") + "\n"
	}
	return sections
}

// AllocatedBy is the number of bytes f allocates: what an operation costs
// in a test that a loaded machine does not change, as it changes time.
func AllocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
