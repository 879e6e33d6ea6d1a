package terminal

import "github.com/acpterm/acpterm/internal/text/utf8cut"

// tail keeps the newest limit bytes written to it in a ring buffer. The
// buffer grows on demand up to limit and never beyond, so memory is
// O(limit) whatever the volume written, and an idle terminal with a large
// limit costs nothing.
//
// The ring is made of blocks of tailBlock bytes, so that growing adds a
// block and moves nothing: a command that writes megabytes would
// otherwise pay for every doubling with a copy of all it wrote before
// into memory it touches for the first time. Below tailBlock the ring is
// one block, which grows by doubling.
//
// tail is not safe for concurrent use; the terminal's mutex guards it.
type tail struct {
	limit  int
	blocks [][]byte // every one tailBlock long, but a lone first block
	size   int      // the ring's capacity: the blocks' bytes, at most limit
	start  int      // ring position of the oldest retained byte
	n      int      // retained bytes
	total  uint64   // bytes ever written
}

func newTail(limit int) *tail { return &tail{limit: limit} }

const (
	// minTailAlloc is the first allocation, so that short outputs do not
	// pay for a series of tiny reallocations.
	minTailAlloc = 4 << 10
	// tailBlock is the unit of a ring that outgrew its first block.
	tailBlock = 64 << 10
)

// Write appends p, dropping the oldest bytes beyond the limit.
func (t *tail) Write(p []byte) {
	t.total += uint64(len(p))
	if t.limit == 0 || len(p) == 0 {
		return
	}
	if len(p) >= t.limit {
		// Only the end of p survives; no need to keep anything older.
		p = p[len(p)-t.limit:]
		t.start, t.n = 0, 0
	}
	if need := t.n + len(p); need > t.size {
		// Nothing was dropped yet (that takes a full ring), so the
		// retained bytes start at position 0.
		t.grow(need)
	}
	if over := t.n + len(p) - t.size; over > 0 {
		t.start = (t.start + over) % t.size
		t.n -= over
	}
	t.put((t.start+t.n)%t.size, p)
	t.n += len(p)
}

// grow enlarges the ring to hold at least need bytes, capped at limit. It
// is called only while the retained bytes start at position 0.
func (t *tail) grow(need int) {
	need = min(need, t.limit)
	if t.size >= need {
		return
	}
	if t.size < min(tailBlock, t.limit) {
		// The first block, alone, doubles up to tailBlock, its bytes
		// copied.
		size := min(max(need, 2*t.size, minTailAlloc), t.limit, tailBlock)
		nb := make([]byte, size)
		if t.size > 0 {
			copy(nb, t.blocks[0][:t.n])
		}
		t.blocks, t.size = append(t.blocks[:0], nb), size
	}
	for t.size < need {
		t.blocks = append(t.blocks, make([]byte, tailBlock))
		t.size = min(len(t.blocks)*tailBlock, t.limit)
	}
}

// put copies p, no longer than the ring, into the ring from position at,
// wrapping at its end.
func (t *tail) put(at int, p []byte) {
	for len(p) > 0 {
		blk, off, end := t.span(at)
		k := copy(blk[off:end], p)
		p, at = p[k:], at+k
		if at == t.size {
			at = 0
		}
	}
}

// span is the block holding ring position at, the offset of at in it,
// and the end of the ring's part of the block.
func (t *tail) span(at int) (blk []byte, off, end int) {
	blk = t.blocks[at/tailBlock]
	first := at - at%tailBlock
	return blk, at - first, min(len(blk), t.size-first)
}

// copyTo copies the retained bytes, oldest first, into dst (len ≥ t.n).
func (t *tail) copyTo(dst []byte) {
	dst = dst[:t.n]
	at := t.start
	for len(dst) > 0 {
		blk, off, end := t.span(at)
		k := copy(dst, blk[off:end])
		dst, at = dst[k:], at+k
		if at == t.size {
			at = 0
		}
	}
}

// Bytes returns a copy of the retained bytes, oldest first.
func (t *tail) Bytes() []byte {
	b := make([]byte, t.n)
	t.copyTo(b)
	return b
}

// Len is the number of retained bytes.
func (t *tail) Len() int { return t.n }

// Total is the number of bytes ever written.
func (t *tail) Total() uint64 { return t.total }

// Truncated reports whether any written byte was dropped from the buffer.
// It is sticky: once bytes are dropped they stay dropped. Text also counts
// characters it drops to fit the limit.
func (t *tail) Truncated() bool { return t.total > uint64(t.n) }

// Text renders the retained bytes as a valid UTF-8 string of at most
// limit bytes, and reports whether any output is missing from it: bytes
// dropped by the buffer, or characters dropped to fit the limit.
//
// When bytes were dropped, up to three leading continuation bytes are
// skipped: they are the rest of a character whose start was cut off, and
// the protocol wants the cut at a character boundary. While the command
// runs (final false), an incomplete character at the very end is held back
// because its remaining bytes may still be on their way; once final, it is
// rendered as U+FFFD like any other invalid sequence (see sanitize).
//
// A U+FFFD takes three bytes where the invalid byte it replaces took one,
// so the text can outgrow the bytes kept. outputByteLimit bounds what the
// agent gets ("truncates from the beginning of the output to stay within
// the limit"), so the oldest characters go until the text fits. The flag
// cannot go back to false later: more output only lengthens the text.
func (t *tail) Text(final bool) (string, bool) {
	b := t.Bytes()
	truncated := t.Truncated()
	if truncated {
		b = utf8cut.TrimStart(b)
	}
	if !final {
		b = b[:len(b)-utf8cut.IncompleteSuffix(b)]
	}
	s := sanitize(b)
	if len(s) > t.limit {
		s, truncated = utf8cut.Tail(s, t.limit), true
	}
	return s, truncated
}
