package jsonrpc2

// The envelope scanner: the fast path of decodeMessage. It checks a line exactly as
// json.Valid does and finds the members of the message in the same pass, so that a large
// params or result value is scanned once, mostly eight bytes at a time (the long strings that
// make a value large), where json.Unmarshal would scan it twice byte by byte, and
// json.Unmarshal of the result in Call a third and fourth time. What it does not handle is left
// to json.Unmarshal, whose behaviour on it stays the reference.

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// maxNesting is encoding/json's limit on nested arrays and objects: a deeper value is not
// valid JSON to it, and so not to us.
const maxNesting = 10000

// envelopeNames are the members of wireIn. encoding/json matches member names to them without
// regard to case; a name that matches one only that way is left to it.
var envelopeNames = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// scanEnvelope fills w as json.Unmarshal(line, w) would, and reports whether it could: line is
// valid JSON, an object whose member names are plain ASCII and are either exactly one of
// envelopeNames or no spelling of one, none of them twice, and whose "jsonrpc" and "method",
// when present, are strings without escapes that are valid UTF-8. Anything else (invalid JSON
// among it) gets false, and w is then to be ignored. The spans in w point into line.
func scanEnvelope(line []byte, w *wireIn) bool {
	var seen [len(envelopeNames)]bool
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return false
		}
		end := skipString(line, i)
		if end < 0 {
			return false
		}
		name := line[i+1 : end-1]
		k := -1
		for n, want := range envelopeNames {
			if string(name) == want {
				k = n
				break
			}
		}
		if k < 0 && !otherName(name) {
			return false
		}
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		start := skipSpace(line, i+1)
		end = skipValue(line, start)
		if end < 0 {
			return false
		}
		if k >= 0 {
			if seen[k] || !w.set(k, line[start:end:end]) {
				return false
			}
			seen[k] = true
		}
		i = skipSpace(line, end)
		if i >= len(line) {
			return false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return skipSpace(line, i+1) == len(line)
		default:
			return false
		}
	}
}

// otherName reports whether a member name (between its quotes) is plain ASCII and no
// spelling of an envelope name, so that json.Unmarshal would ignore the member too.
func otherName(name []byte) bool {
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	for _, want := range envelopeNames {
		if len(name) == len(want) && strings.EqualFold(string(name), want) {
			return false
		}
	}
	return true
}

// set stores the value v of envelope member k, a valid JSON value; false means json.Unmarshal
// is to decode the line instead.
func (w *wireIn) set(k int, v []byte) bool {
	switch envelopeNames[k] {
	case "jsonrpc":
		if string(v) == `"2.0"` {
			w.JSONRPC = "2.0"
			return true
		}
		s, ok := plainString(v)
		w.JSONRPC = s
		return ok
	case "method":
		s, ok := plainString(v)
		w.Method = s
		return ok
	case "id":
		w.ID = v
	case "params":
		w.Params = v
	case "result":
		w.Result = v
	case "error":
		w.Error = v
	}
	return true
}

// plainString returns the JSON string v, valid JSON, when it decodes to its bytes as they
// are: no escapes, valid UTF-8.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	for _, c := range body {
		if c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at b[i], or -1 when no
// valid one does. It accepts exactly what json.Valid accepts, nesting limit included.
func skipValue(b []byte, i int) int {
	var stackBuf [64]byte
	closers := stackBuf[:0] // of the open arrays and objects, innermost last
	for {
		// A value starts at b[i].
		if i < 0 || i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '"':
			i = skipString(b, i)
		case '{', '[':
			if len(closers) >= maxNesting {
				return -1
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer {
				i++
				break
			}
			closers = append(closers, closer)
			if closer == '}' {
				i = skipMemberName(b, i)
			}
			continue
		case 't':
			i = skipLiteral(b, i, "true")
		case 'f':
			i = skipLiteral(b, i, "false")
		case 'n':
			i = skipLiteral(b, i, "null")
		default:
			i = skipNumber(b, i)
		}
		// A value ended at b[i]: close what it completes, up to the next value.
		for {
			if i < 0 {
				return -1
			}
			if len(closers) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			closer := closers[len(closers)-1]
			if b[i] == closer {
				closers = closers[:len(closers)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
			if closer == '}' {
				i = skipMemberName(b, i)
			}
			break
		}
	}
}

// skipMemberName skips `"name" :` and the space after it, from b[i]; -1 when it is not there.
func skipMemberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	i = skipString(b, i)
	if i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipNumber skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// plainByte[c] is true for a byte that stands for itself in a JSON string: not a control
// character, a quote or a backslash. Bytes of invalid UTF-8 are allowed, as json.Valid allows
// them.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Eight bytes at a time: each lane of a word is one byte of the string.
const (
	lanes01 = 0x0101010101010101
	lanes20 = 0x2020202020202020
	lanes80 = 0x8080808080808080
	quotes  = '"' * lanes01
	slashes = '\\' * lanes01
)

// special reports whether one of the eight bytes of x may be a control character, a quote or
// a backslash (it can be wrong the other way, past a byte that is one).
func special(x uint64) bool {
	q, s := x^quotes, x^slashes
	return ((x-lanes20)&^x|(q-lanes01)&^q|(s-lanes01)&^s)&lanes80 != 0
}

// skipString returns the index just past the JSON string that starts at b[i] (a '"'), or -1
// when it is not a valid one.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		for j+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		for j < len(b) && plainByte[b[j]] {
			j++
		}
		if j >= len(b) {
			return -1
		}
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(b) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return -1
				}
				j += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
