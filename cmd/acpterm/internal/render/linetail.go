package render

import (
	"bytes"
	"unicode/utf8"

	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// maxPartialLine bounds the unfinished line kept for display; a longer
// line is cut there (the screen could not show more of it anyway).
const maxPartialLine = 8 << 10

// lineTail keeps what a screen shows of a terminal's output: its last
// lines (a ring of at most max), the line being written, and counts. It
// never holds more than max+1 lines, whatever the command prints.
type lineTail struct {
	max     int
	ring    []string
	start   int // index of the oldest line in ring
	partial []byte
	cut     bool   // partial reached maxPartialLine; the rest of the line is ignored
	lines   uint64 // complete lines seen
	bytes   uint64 // output bytes seen, skipped ones included
	skipped uint64 // bytes not seen (the subscriber fell behind)
	// forgotten: the lines are no longer kept, only counted (forget).
	forgotten bool
}

func newLineTail(max int) *lineTail { return &lineTail{max: max} }

// Write adds output.
func (t *lineTail) Write(p []byte) {
	t.bytes += uint64(len(p))
	if t.forgotten {
		t.lines += uint64(bytes.Count(p, []byte{'\n'}))
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.addPartial(p)
			return
		}
		t.addPartial(p[:i])
		t.push(displayLine(t.partial))
		t.partial, t.cut = t.partial[:0], false
		p = p[i+1:]
	}
}

// forget drops the lines kept, and keeps only counting what is written.
func (t *lineTail) forget() {
	if len(t.partial) > 0 {
		t.lines++ // the line in progress ends here, as far as the tail knows
	}
	t.ring, t.start, t.partial, t.cut, t.forgotten = nil, 0, nil, false, true
}

// Skip records n bytes that were not seen. The line in progress cannot be
// trusted any more, so it is ended as it is.
func (t *lineTail) Skip(n uint64) {
	if n == 0 {
		return
	}
	t.bytes += n
	t.skipped += n
	if len(t.partial) > 0 {
		t.push(displayLine(t.partial) + " …")
		t.partial, t.cut = t.partial[:0], false
	}
}

func (t *lineTail) addPartial(p []byte) {
	if t.cut {
		return
	}
	if room := maxPartialLine - len(t.partial); len(p) > room {
		p, t.cut = p[:room], true
	}
	t.partial = append(t.partial, p...)
}

func (t *lineTail) push(line string) {
	t.lines++
	if t.max <= 0 {
		return
	}
	if len(t.ring) < t.max {
		t.ring = append(t.ring, line)
		return
	}
	t.ring[t.start] = line
	t.start = (t.start + 1) % t.max
}

// Total is the number of lines seen, counting an unfinished last line.
func (t *lineTail) Total() uint64 {
	if len(t.partial) > 0 {
		return t.lines + 1
	}
	return t.lines
}

// Tail returns the last n lines (the unfinished one included) and how many
// lines came before them.
func (t *lineTail) Tail(n int) (lines []string, above uint64) {
	all := make([]string, 0, len(t.ring)+1)
	all = append(all, t.ring[t.start:]...)
	all = append(all, t.ring[:t.start]...)
	if len(t.partial) > 0 {
		all = append(all, displayLine(t.partial))
	}
	n = max(n, 0)
	if n < len(all) {
		all = all[len(all)-n:]
	}
	return all, t.Total() - uint64(len(all))
}

// displayLine turns a line of raw command output into text that cannot
// disturb the screen (textsafe.Strip): a carriage return keeps what was
// written after it, as a progress bar means it to be seen.
func displayLine(b []byte) string {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if i := bytes.LastIndexByte(b, '\r'); i >= 0 {
		b = b[i+1:]
	}
	return textsafe.Strip(b)
}

// clipColumns shortens s to at most width columns (counting runes), marking a cut
// with an ellipsis.
func clipColumns(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	if width == 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == width-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
