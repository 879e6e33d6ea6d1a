package remote

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

// The output notification is most of what the exec server sends, and
// what it sends fastest, so it has an encoder and a decoder of its own:
// encoding/json would scan each chunk again after a Marshaler (to compact
// it) and twice more when decoding, byte by byte. Both are exact about
// JSON; the decoder hands whatever is not in the shape the encoder
// writes to encoding/json, whose answer stays the reference (see
// FuzzOutputNotification).

// maxChunk is the most output one notification carries: large enough
// that a message's fixed costs vanish beside its bytes, and just under
// the 256 KiB that the connection's writer hands to one Write, so that an
// attached chunk and its header go out in one write.
const maxChunk = 255 << 10

// MarshalJSON encodes n as "text" when its bytes are valid UTF-8 whose
// escaping is no longer than base64, else as "data", base64.
func (n *OutputNotification) MarshalJSON() ([]byte, error) {
	return n.appendJSON(nil), nil
}

// appendHeader is appendJSON without the data: the notification of
// bytes sent as its attachment.
func (n *OutputNotification) appendHeader(b []byte) []byte {
	b = n.appendIDs(b)
	return append(b, '}')
}

// UnmarshalJSON decodes either form; Data never points into b.
func (n *OutputNotification) UnmarshalJSON(b []byte) error {
	*n = OutputNotification{}
	if decodeOutputFast(b, n) {
		return nil
	}
	*n = OutputNotification{}
	var w outputWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	n.SessionID, n.TerminalID, n.Seq, n.Offset, n.Data = w.SessionID, w.TerminalID, w.Seq, w.Offset, w.Data
	if w.Text != nil {
		n.Data = []byte(*w.Text)
	}
	return nil
}

// outputWire is the wire form for encoding/json. When both members are
// present, text wins.
type outputWire struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Seq        uint64         `json:"seq"`
	Offset     uint64         `json:"offset"`
	Data       []byte         `json:"data"`
	Text       *string        `json:"text"`
}

func (n *OutputNotification) appendJSON(b []byte) []byte {
	b = n.appendIDs(b)
	mark := len(b)
	if utf8.Valid(n.Data) {
		b = append(b, `,"text":"`...)
		if b, ok := appendEscaped(b, n.Data, base64.StdEncoding.EncodedLen(len(n.Data))); ok {
			return append(b, `"}`...)
		}
		b = b[:mark]
	}
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, n.Data)
	return append(b, `"}`...)
}

// appendIDs appends the object's start and every member but the data.
func (n *OutputNotification) appendIDs(b []byte) []byte {
	b = append(b, `{"sessionId":`...)
	b = appendJSONString(b, string(n.SessionID))
	b = append(b, `,"terminalId":`...)
	b = appendJSONString(b, string(n.TerminalID))
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, n.Seq, 10)
	b = append(b, `,"offset":`...)
	return strconv.AppendUint(b, n.Offset, 10)
}

// appendJSONString appends s as a JSON string, as encoding/json writes it
// (invalid UTF-8 becomes U+FFFD), without HTML escapes.
func appendJSONString(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		b = append(b, '"')
		b, _ = appendEscaped(b, []byte(s), -1)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // cannot fail for a string
	return append(b, q...)
}

// appendEscaped appends the body of a JSON string holding p, valid UTF-8,
// unless escaping makes it longer than budget (negative: no budget); ok
// is false then, and the bytes appended are to be dropped.
func appendEscaped(b, p []byte, budget int) (_ []byte, ok bool) {
	size := len(p)
	for len(p) > 0 {
		i := nextEscape(p)
		b = append(b, p[:i]...)
		if i == len(p) {
			break
		}
		c := p[i]
		p = p[i+1:]
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
			size++
		case '\n':
			b = append(b, '\\', 'n')
			size++
		case '\r':
			b = append(b, '\\', 'r')
			size++
		case '\t':
			b = append(b, '\\', 't')
			size++
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			size += 5
		}
		if budget >= 0 && size > budget {
			return b, false
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// Eight bytes at a time: the masks find a byte below 0x20, a '"' or a
// '\\' in a word (exactly whether there is one; which one is found byte
// by byte).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// nextEscape is the index of the first byte of p that a JSON string must
// escape, or len(p).
func nextEscape(p []byte) int {
	i := 0
	for ; i+8 <= len(p); i += 8 {
		w := binary.LittleEndian.Uint64(p[i:])
		// A zero byte of q or s is a '"' or a '\\' of w; the lowest
		// byte flagged is a true one (a borrow only flags bytes above).
		q, s := w^(lsb*'"'), w^(lsb*'\\')
		hit := ((w-lsb*0x20)&^w | (q-lsb)&^q | (s-lsb)&^s) & msb
		if hit != 0 {
			return i + bits.TrailingZeros64(hit)/8
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(p)
}

// decodeOutputFast decodes what appendJSON writes, and any valid JSON of
// the same members in the same spelling, in any order, with any
// whitespace and escapes but surrogate pairs. It reports false, having
// decoded nothing certain, for anything else: invalid JSON, other or
// repeated members, both text and data, numbers that are not plain
// unsigned integers, strings that are not valid UTF-8, base64 that does
// not decode.
func decodeOutputFast(b []byte, n *OutputNotification) bool {
	d := fastDecoder{b: b}
	if !d.byte('{') {
		return false
	}
	var seen [6]bool
	if d.peek() == '}' {
		d.i++
		return d.end()
	}
	for {
		key, ok := d.rawString()
		if !ok || !d.byte(':') {
			return false
		}
		k := -1
		for j, name := range outputMembers {
			if string(key) == name {
				k = j
			}
		}
		if k < 0 || seen[k] {
			return false
		}
		seen[k] = true
		switch k {
		case 0, 1:
			s, ok := d.str()
			if !ok {
				return false
			}
			if k == 0 {
				n.SessionID = acp.SessionID(s)
			} else {
				n.TerminalID = acp.TerminalID(s)
			}
		case 2, 3:
			v, ok := d.uint()
			if !ok {
				return false
			}
			if k == 2 {
				n.Seq = v
			} else {
				n.Offset = v
			}
		case 4: // data
			raw, ok := d.rawString()
			if !ok {
				return false
			}
			out := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
			m, err := base64.StdEncoding.Decode(out, raw)
			if err != nil {
				return false
			}
			n.Data = out[:m]
		case 5: // text
			s, ok := d.text()
			if !ok {
				return false
			}
			n.Data = s
		}
		switch d.next() {
		case ',':
		case '}':
			return !(seen[4] && seen[5]) && d.end()
		default:
			return false
		}
	}
}

var outputMembers = [...]string{"sessionId", "terminalId", "seq", "offset", "data", "text"}

// fastDecoder reads JSON tokens from b at i.
type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) skipSpace() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) peek() byte {
	d.skipSpace()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *fastDecoder) next() byte {
	c := d.peek()
	if c != 0 {
		d.i++
	}
	return c
}

func (d *fastDecoder) byte(c byte) bool { return d.next() == c }

func (d *fastDecoder) end() bool {
	d.skipSpace()
	return d.i == len(d.b)
}

// rawString reads a string with no escapes and only ASCII in it (a
// member name, base64), and returns its body.
func (d *fastDecoder) rawString() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	j := start + nextEscape(d.b[start:])
	if j >= len(d.b) || d.b[j] != '"' {
		return nil, false
	}
	body := d.b[start:j]
	for _, c := range body {
		if c >= utf8.RuneSelf {
			return nil, false
		}
	}
	d.i = j + 1
	return body, true
}

func (d *fastDecoder) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	if s, ok, plain := d.plain(); plain {
		return string(s), ok
	}
	s, ok := d.escaped()
	return string(s), ok
}

// text reads a string, valid UTF-8, and returns its value in a new slice.
func (d *fastDecoder) text() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	if s, ok, plain := d.plain(); plain {
		return bytes.Clone(s), ok
	}
	return d.escaped()
}

// plain reads the rest of a string that has no escape, the common case,
// and returns it in place (valid tells whether it is UTF-8); plain is
// false, and nothing read, when an escape comes before its end. A string
// the rest of b cannot end is not plain: escaped says what is wrong.
func (d *fastDecoder) plain() (s []byte, valid, plain bool) {
	j := d.i + nextEscape(d.b[d.i:])
	if j >= len(d.b) || d.b[j] != '"' {
		return nil, false, false
	}
	s = d.b[d.i:j]
	d.i = j + 1
	return s, utf8.Valid(s), true
}

// escaped reads the rest of a string that holds escapes. Before, every
// string took this way, each allocating the rest of the message: two
// large zeroed allocations per output notification for its IDs, a fifth
// of a lossless stream's client CPU.
func (d *fastDecoder) escaped() ([]byte, bool) {
	// The value is no longer than the rest of b: one allocation.
	out := make([]byte, 0, len(d.b)-d.i)
	for {
		j := d.i + nextEscape(d.b[d.i:])
		if j >= len(d.b) {
			return nil, false
		}
		out = append(out, d.b[d.i:j]...)
		c := d.b[j]
		d.i = j + 1
		switch {
		case c == '"':
			return out, utf8.Valid(out)
		case c != '\\' || d.i >= len(d.b):
			return nil, false // a control byte, or the end
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return nil, false
			}
			r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
			if err != nil || r >= 0xd800 && r < 0xe000 {
				return nil, false // surrogates: encoding/json's business
			}
			d.i += 4
			out = utf8.AppendRune(out, rune(r))
		default:
			return nil, false
		}
	}
}

// uint reads a plain unsigned integer: digits, no sign, fraction or
// exponent, no leading zero, within uint64.
func (d *fastDecoder) uint() (uint64, bool) {
	d.skipSpace()
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	digits := d.b[start:d.i]
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(digits), 10, 64)
	return v, err == nil
}
