package terminal

import "github.com/acpterm/acpterm/internal/text/utf8cut"

// tail keeps the newest limit bytes written to it in a ring buffer. The
// buffer grows on demand up to limit and never beyond, so memory is
// O(limit) whatever the volume written, and an idle terminal with a large
// limit costs nothing.
//
// tail is not safe for concurrent use; the terminal's mutex guards it.
type tail struct {
	limit int
	buf   []byte // len(buf) is the current capacity, at most limit
	start int    // index in buf of the oldest retained byte
	n     int    // retained bytes
	total uint64 // bytes ever written
}

func newTail(limit int) *tail { return &tail{limit: limit} }

// minTailAlloc is the first allocation, so that short outputs do not pay
// for a series of tiny reallocations.
const minTailAlloc = 4 << 10

// Write appends p, dropping the oldest bytes beyond the limit.
func (t *tail) Write(p []byte) {
	t.total += uint64(len(p))
	if t.limit == 0 || len(p) == 0 {
		return
	}
	if len(p) >= t.limit {
		// Only the end of p survives; no need to keep anything older.
		t.grow(t.limit)
		copy(t.buf, p[len(p)-t.limit:])
		t.start, t.n = 0, t.limit
		return
	}
	if need := t.n + len(p); need > len(t.buf) && len(t.buf) < t.limit {
		t.grow(need)
	}
	c := len(t.buf)
	if over := t.n + len(p) - c; over > 0 {
		t.start = (t.start + over) % c
		t.n -= over
	}
	at := (t.start + t.n) % c
	k := copy(t.buf[at:], p)
	copy(t.buf, p[k:])
	t.n += len(p)
}

// grow reallocates buf to hold at least need bytes (capped at limit),
// keeping the retained bytes in order at its start.
func (t *tail) grow(need int) {
	if len(t.buf) >= need || len(t.buf) == t.limit {
		return
	}
	size := max(need, 2*len(t.buf), minTailAlloc)
	size = min(size, t.limit)
	nb := make([]byte, size)
	t.copyTo(nb)
	t.buf, t.start = nb, 0
}

// copyTo copies the retained bytes, oldest first, into dst (len ≥ t.n).
func (t *tail) copyTo(dst []byte) {
	if t.n == 0 {
		return
	}
	k := copy(dst[:t.n], t.buf[t.start:min(t.start+t.n, len(t.buf))])
	copy(dst[k:t.n], t.buf)
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
