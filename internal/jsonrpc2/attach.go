package jsonrpc2

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Attachments are raw bytes sent with a message (Options.Attachments,
// NotifyAppend): a line holding attachMark and the size in decimal, the
// bytes, then the message's own line. The mark is a control byte, which
// no JSON text may start with, so the framing stays line-delimited JSON
// with one more kind of line, and a peer that does not take attachments
// sees a malformed line rather than a misread message.

const attachMark = 0x01

// maxAttachDigits bounds the size line: a size has at most 19 digits.
const maxAttachDigits = 19

func isAttachment(line []byte) bool { return len(line) > 0 && line[0] == attachMark }

func writeAttachment(buf *bytes.Buffer, data []byte) {
	buf.WriteByte(attachMark)
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(len(data)), 10))
	buf.WriteByte('\n')
	buf.Write(data)
}

// readAttachment reads the attachment whose size line is line. One over
// MaxMessageSize, or with a malformed size, ends the connection: its
// bytes cannot be told from what follows, so nothing after them could be
// trusted to be framed as the peer meant.
func (c *Conn) readAttachment(lr *lineReader, line []byte) ([]byte, error) {
	digits := line[1:]
	n, err := strconv.ParseUint(string(digits), 10, 63)
	if err != nil || len(digits) > maxAttachDigits {
		return nil, fmt.Errorf("jsonrpc2: a malformed attachment size %.40q", digits)
	}
	if n > uint64(c.maxSize) {
		return nil, fmt.Errorf("jsonrpc2: an attachment of %d bytes, over the %d-byte message limit", n, c.maxSize)
	}
	var att []byte
	if c.newAttach != nil {
		att = c.newAttach(int(n))[:n]
	} else {
		att = make([]byte, n)
	}
	if _, err := io.ReadFull(lr.br, att); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = io.EOF // the peer went away mid-frame: the end, as for a cut line
		}
		lr.err = err
		return nil, err
	}
	return att, nil
}
