package display

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

const (
	// stopNote ends the live output of a command whose stream spent its
	// budget; the final update still carries the output's tail as text.
	stopNote = "\r\n[live output stopped: the output limit is reached; the tail follows when the command ends]\r\n"
	// stopNoteReserve is the part of the budget kept for the update that
	// carries stopNote.
	stopNoteReserve = 1024
	// minChunk is the least output worth an update of its own when the
	// budget is nearly spent.
	minChunk = 16
)

// streamBuffer holds the output of a command between two live updates: at
// most chunk bytes, the newest, and a count of the bytes dropped before
// them. Memory stays O(chunk) however fast the command writes.
type streamBuffer struct {
	budget int // the bytes the live updates may take on the wire, all told
	chunk  int // the output bytes held, at most
	meta   bool
	wake   chan struct{}

	mu      sync.Mutex
	data    []byte
	skipped uint64 // bytes dropped just before data
	done    bool   // the output ended
	stopped bool   // the stream ended early: drop everything
}

func newStreamBuffer(budget, chunk int, form Form) *streamBuffer {
	if chunk <= 0 {
		chunk = DefaultChunkBytes
	}
	return &streamBuffer{budget: budget, chunk: chunk, meta: form == FormZedMeta, wake: make(chan struct{}, 1)}
}

func (b *streamBuffer) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// write adds output; dropped counts bytes before p that never got here.
func (b *streamBuffer) write(p []byte, dropped uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.done {
		return
	}
	b.skipped += dropped
	if len(p) >= b.chunk {
		b.skipped += uint64(len(b.data) + len(p) - b.chunk)
		b.data = append(b.data[:0], p[len(p)-b.chunk:]...)
	} else {
		if over := len(b.data) + len(p) - b.chunk; over > 0 {
			b.skipped += uint64(over)
			b.data = b.data[:copy(b.data, b.data[over:])]
		}
		b.data = append(b.data, p...)
	}
	b.signal()
}

// end marks the end of the output.
func (b *streamBuffer) end(error) {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.signal()
}

// stop drops what is held and all that comes later.
func (b *streamBuffer) stop() {
	b.mu.Lock()
	b.stopped, b.data, b.skipped = true, nil, 0
	b.mu.Unlock()
}

// pending reports whether there is something to send: in the _meta form,
// which carries text, a character cut short by the end of a write waits
// for its last bytes until the output ends.
func (b *streamBuffer) pending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pendingLocked()
}

func (b *streamBuffer) pendingLocked() bool {
	if b.stopped {
		return false
	}
	n := len(b.data)
	if b.meta && !b.done {
		n -= incompleteRune(b.data)
	}
	return n > 0 || b.skipped > 0
}

// ended reports that the output ended and all of it was taken.
func (b *streamBuffer) ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done && !b.pendingLocked()
}

// take returns what is held, preceded by a note of the bytes skipped, and
// empties the buffer (but for an incomplete last character, see pending).
func (b *streamBuffer) take() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.data)
	if b.meta && !b.done {
		n -= incompleteRune(b.data)
	}
	var out []byte
	data := b.data[:n]
	if b.skipped > 0 {
		out = append(out, "\r\n[... "+strconv.FormatUint(b.skipped, 10)+" bytes of output skipped ...]\r\n"...)
		data = cutToRune(data, true)
	}
	out = append(out, data...)
	b.data = b.data[:copy(b.data, b.data[n:])]
	b.skipped = 0
	return out
}

// cutToRune drops the continuation bytes at the front of b (at most
// utf8.UTFMax-1 of them) when text is set, so that a cut through a
// character does not start the chunk with half of it.
func cutToRune(b []byte, text bool) []byte {
	if !text {
		return b
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// incompleteRune is the length of a multi-byte character at the end of b
// that is still missing bytes: 0 to 3.
func incompleteRune(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if c < utf8.RuneSelf {
			return 0
		}
		if !utf8.FullRune(b[len(b)-i:]) {
			return i
		}
		return 0
	}
	return 0
}
