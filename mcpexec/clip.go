package mcpexec

import (
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// clip gathers the output of one answer within a byte budget: the first
// half and the last half of it, with what lies between counted, so that a
// long output keeps both the command's start (what it was doing) and its
// end (how it ended), as Codex's truncation does. Memory stays within
// twice the budget whatever the volume.
type clip struct {
	limit    int // bytes
	head     []byte
	headDone bool // a gap was seen: later bytes go to the tail only
	tail     []byte
	total    uint64 // bytes seen, gaps included
	gaps     uint64 // bytes the subscription dropped before they reached us
}

func newClip(limit int) *clip { return &clip{limit: max(limit, 0)} }

func (c *clip) headCap() int { return c.limit / 2 }
func (c *clip) tailCap() int { return c.limit - c.headCap() }

// add takes the next output bytes.
func (c *clip) add(p []byte) {
	c.total += uint64(len(p))
	if !c.headDone {
		n := min(len(p), c.headCap()-len(c.head))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
		if len(p) == 0 {
			return
		}
		c.headDone = true
	}
	tc := c.tailCap()
	if len(p) >= tc {
		c.tail = append(c.tail[:0], p[len(p)-tc:]...)
		return
	}
	if len(c.tail)+len(p) > 2*tc {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)+len(p)-tc:]...)
	}
	c.tail = append(c.tail, p...)
}

// gap counts n bytes that were lost before the next ones.
func (c *clip) gap(n uint64) {
	if n == 0 {
		return
	}
	c.total += n
	c.gaps += n
	c.headDone = true
}

// truncated reports whether the text leaves bytes out.
func (c *clip) truncated() bool {
	return c.total > uint64(len(c.head)+len(c.tailKept()))
}

func (c *clip) tailKept() []byte {
	if len(c.tail) > c.tailCap() {
		return c.tail[len(c.tail)-c.tailCap():]
	}
	return c.tail
}

// text renders the output as valid UTF-8: all of it when it fits, else
// its head and tail around a line saying how much was left out.
func (c *clip) text() string {
	if !c.truncated() {
		return strings.ToValidUTF8(string(c.head)+string(c.tail), "\uFFFD")
	}
	head := utf8cut.Head(c.head, len(c.head))
	// Cut the head before an unfinished character and the tail after one
	// whose start was dropped, so that nothing turns into U+FFFD that was
	// valid in the command's output.
	if k := utf8cut.IncompleteSuffix(head); k > 0 {
		head = head[:len(head)-k]
	}
	tail := utf8cut.TrimStart(c.tailKept())
	left := c.total - uint64(len(head)+len(tail))
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(head), "\uFFFD"))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "…%d tokens truncated…", (left+bytesPerToken-1)/bytesPerToken)
	if c.gaps > 0 {
		fmt.Fprintf(&b, " (%d bytes were never read: the command wrote faster than it was polled)", c.gaps)
	}
	b.WriteByte('\n')
	b.WriteString(strings.ToValidUTF8(string(tail), "\uFFFD"))
	return b.String()
}

// tokens is the size of everything seen, in Codex's tokens.
func (c *clip) tokens() uint64 { return (c.total + bytesPerToken - 1) / bytesPerToken }
