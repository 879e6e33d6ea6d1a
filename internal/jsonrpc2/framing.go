package jsonrpc2

import (
	"bufio"
	"io"
)

const (
	// DefaultMaxMessageSize bounds one incoming line. It is large because a terminal/output
	// result carries the whole retained output in one message.
	DefaultMaxMessageSize = 64 << 20

	readBufSize = 64 << 10
	// headSize is how much of a too-long line is kept, to find its id in.
	headSize = 4 << 10
	// keepLineCap: a line buffer grown past this by one big message is dropped afterwards,
	// so a single 50 MiB result does not pin 50 MiB for the life of the connection.
	keepLineCap = 1 << 20
)

// lineReader splits a stream into lines. Memory stays within max plus one read buffer: the bytes
// of a line past max are read and thrown away, never gathered.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte // gathers a line that does not fit in br's buffer
	head []byte // the start of a too-long line
	err  error  // sticky: the error that ended the stream
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufSize), max: max}
}

// next returns the next line without its "\n" or "\r\n". The line is valid until the next call.
// tooLong reports a line longer than max, whose bytes were skipped; line then holds its first
// headSize bytes at most. A final line with no "\n" is returned before io.EOF; a partial line
// cut by any other read error is dropped.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	if lr.err != nil {
		return nil, false, lr.err
	}
	if cap(lr.buf) > keepLineCap {
		lr.buf = nil
	}
	lr.buf = lr.buf[:0]
	limit := lr.max + 2 // room for "\r\n"; checked exactly once the terminator is trimmed
	n := 0
	for {
		chunk, err := lr.br.ReadSlice('\n')
		n += len(chunk)
		switch {
		case n > limit:
			if n-len(chunk) <= limit { // just went over: keep the start
				lr.head = append(append(lr.head[:0], lr.buf...), chunk...)
				lr.head = lr.head[:min(len(lr.head), headSize)]
			}
			if lr.buf != nil {
				lr.buf = lr.buf[:0] // forget what was gathered; keep reading to the "\n"
			}
			line = nil
		case len(lr.buf) == 0 && err != bufio.ErrBufferFull:
			line = chunk // the whole line is in br's buffer: no copy
		default:
			lr.buf = append(lr.buf, chunk...)
			line = lr.buf
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			lr.err = err
			if err != io.EOF || n == 0 {
				return nil, false, err
			}
		}
		break
	}
	if n > limit {
		return lr.head, true, nil
	}
	if k := len(line); k > 0 && line[k-1] == '\n' {
		line = line[:k-1]
		if k := len(line); k > 0 && line[k-1] == '\r' {
			line = line[:k-1]
		}
	}
	if len(line) > lr.max {
		return line[:min(len(line), headSize)], true, nil
	}
	return line, false, nil
}
