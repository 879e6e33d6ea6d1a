package jsonrpc2

import (
	"bufio"
	"io"
	"runtime"
)

const (
	// DefaultMaxMessageSize bounds one incoming line. It is large because a terminal/output
	// result carries the whole retained output in one message.
	DefaultMaxMessageSize = 64 << 20

	readBufSize = 64 << 10
	// headSize is how much of a too-long line is kept, to find its id in.
	headSize = 4 << 10
	// keepLineCap: lines up to this size are gathered in one buffer that is reused for the
	// next line. A longer line is gathered in blocks of this size instead and joined once,
	// into a slice of exactly its length that the caller keeps: growing one buffer by
	// appending would copy the line again at every growth step and leave each smaller
	// buffer behind as garbage (several times the line's size at the peak), and reusing it
	// would pin the largest line ever seen for the life of the connection.
	keepLineCap = 1 << 20
)

// lineReader splits a stream into lines. Memory stays within about twice max plus one read
// buffer: the bytes of a line past max are read and thrown away, never gathered, and a long
// line exists at most twice (its blocks and the joined copy) and only while being joined.
type lineReader struct {
	br     *bufio.Reader
	max    int
	buf    []byte   // gathers a line that does not fit in br's buffer, up to keepLineCap
	blocks [][]byte // gathers a longer line: buf's bytes, then keepLineCap-sized blocks
	head   []byte   // the start of a too-long line
	err    error    // sticky: the error that ended the stream
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufSize), max: max}
}

// next returns the next line without its "\n" or "\r\n". owned reports a line that no later
// call touches, which the caller may keep (a long line); otherwise the line is valid until the
// next call. tooLong reports a line longer than max, whose bytes were skipped; line then holds
// its first headSize bytes at most. A final line with no "\n" is returned before io.EOF; a
// partial line cut by any other read error is dropped.
func (lr *lineReader) next() (line []byte, owned, tooLong bool, err error) {
	if lr.err != nil {
		return nil, false, false, lr.err
	}
	lr.buf = lr.buf[:0]
	lr.blocks = nil
	limit := lr.max + 2 // room for "\r\n"; checked exactly once the terminator is trimmed
	n := 0
	for {
		chunk, err := lr.br.ReadSlice('\n')
		n += len(chunk)
		switch {
		case n > limit:
			if n-len(chunk) <= limit { // just went over: keep the start
				lr.head = append(lr.head[:0], lr.firstBytes(headSize)...)
				if len(lr.head) < headSize {
					lr.head = append(lr.head, chunk[:min(len(chunk), headSize-len(lr.head))]...)
				}
			}
			// Forget what was gathered; keep reading to the "\n".
			lr.buf, lr.blocks = lr.buf[:0], nil
			line = nil
		case len(lr.buf) == 0 && lr.blocks == nil && err != bufio.ErrBufferFull:
			line = chunk // the whole line is in br's buffer: no copy
		case lr.blocks == nil && len(lr.buf)+len(chunk) <= keepLineCap:
			lr.buf = append(lr.buf, chunk...)
			line = lr.buf
		default:
			lr.gather(chunk)
			line = nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			lr.err = err
			if err != io.EOF || n == 0 {
				lr.blocks = nil
				return nil, false, false, err
			}
		}
		break
	}
	if n > limit {
		return lr.head, false, true, nil
	}
	if lr.blocks != nil {
		line, owned = lr.join(n), true
	}
	if k := len(line); k > 0 && line[k-1] == '\n' {
		line = line[:k-1]
		if k := len(line); k > 0 && line[k-1] == '\r' {
			line = line[:k-1]
		}
	}
	if len(line) > lr.max {
		return line[:min(len(line), headSize)], false, true, nil
	}
	return line, owned, false, nil
}

// gather appends chunk to the blocks of a long line. The first block is the buffer gathered so
// far, handed over (buf starts afresh for the next line).
func (lr *lineReader) gather(chunk []byte) {
	if lr.blocks == nil {
		lr.blocks = [][]byte{lr.buf}
		lr.buf = nil
	}
	for len(chunk) > 0 {
		last := &lr.blocks[len(lr.blocks)-1]
		if len(*last) == cap(*last) {
			lr.blocks = append(lr.blocks, make([]byte, 0, keepLineCap))
			last = &lr.blocks[len(lr.blocks)-1]
		}
		k := min(len(chunk), cap(*last)-len(*last))
		*last = append(*last, chunk[:k]...)
		chunk = chunk[k:]
	}
}

// join copies the blocks of a long line of n bytes into one slice of exactly that size.
func (lr *lineReader) join(n int) []byte {
	line := make([]byte, 0, n)
	for _, b := range lr.blocks {
		line = append(line, b...)
	}
	lr.blocks = nil
	if n >= collectAfter {
		// The blocks are garbage now, as large as the line. Left to the
		// pacer, they would stay until the heap doubles, and decoding the
		// line (its strings are another copy) would pile on top of them:
		// collected now, a message costs about twice its size at the peak
		// instead of three to four times. A full collection is cheap next
		// to reading this many bytes, and the heap is mostly pointer-free.
		runtime.GC()
	}
	return line
}

// collectAfter is the line size from which join collects the garbage it
// leaves.
const collectAfter = 16 << 20

// firstBytes returns up to k bytes of the start of the line gathered so far.
func (lr *lineReader) firstBytes(k int) []byte {
	if lr.blocks != nil {
		return lr.blocks[0][:min(k, len(lr.blocks[0]))]
	}
	return lr.buf[:min(k, len(lr.buf))]
}
