package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// Error is a JSON-RPC error object as it travels on the wire.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc2: %s (code %d)", e.Message, e.Code)
}

// Error codes defined by JSON-RPC 2.0, and ACP's request-cancelled code.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
)

// methodCancelRequest is the notification that cancels a call in flight; the reader handles it.
const methodCancelRequest = "$/cancel_request"

// Outgoing envelopes. Params and Result stay `any` so a value is marshalled once, straight into
// the message, instead of into a RawMessage that the encoder would scan again.
type (
	wireRequest struct {
		JSONRPC string `json:"jsonrpc"`
		ID      ID     `json:"id,omitzero"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}
	wireResult struct {
		JSONRPC string `json:"jsonrpc"`
		ID      ID     `json:"id"`
		Result  any    `json:"result"`
	}
	wireError struct {
		JSONRPC string `json:"jsonrpc"`
		ID      ID     `json:"id"`
		Error   *Error `json:"error"`
	}
)

// wireIn is any incoming message. Error stays raw so that a malformed error object still
// reaches its caller instead of leaving it waiting.
type wireIn struct {
	JSONRPC string  `json:"jsonrpc"`
	ID      RawSpan `json:"id"`
	Method  string  `json:"method"`
	Params  RawSpan `json:"params"`
	Result  RawSpan `json:"result"`
	Error   RawSpan `json:"error"`
}

// RawSpan is a json.RawMessage that points into the decoded input instead of copying it:
// json.Unmarshal hands an Unmarshaler a slice of its input, and json.RawMessage would copy
// that. A 60 MiB params value is then held once, in the line, not twice. Whoever decodes
// into a RawSpan owns the input and decides whether to keep it or copy the span (here,
// the caller of decodeMessage: dispatch).
type RawSpan []byte

func (r *RawSpan) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

type msgKind int

const (
	kindInvalid      msgKind = iota // reply with err (id null when the id was unreadable)
	kindIgnored                     // log note, no reply: never answer something that is a response
	kindCall                        // method and id
	kindNotification                // method, no id (or id null)
	kindResponse                    // result or error, and an id
)

// decoded is one incoming line, classified.
type decoded struct {
	kind   msgKind
	id     ID
	method string
	params json.RawMessage // nil when absent or null
	result json.RawMessage // kindResponse without error
	err    *Error          // kindResponse: the peer's error; kindInvalid: the reply to send
	note   string          // kindIgnored: why
	// bare: kindInvalid for an object with an id but no method, result or
	// error, which may be a peer's broken answer to a call of ours.
	bare bool
}

func invalid(id ID, format string, args ...any) decoded {
	return decoded{kind: kindInvalid, id: id, err: &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}}
}

func parseError(err error) decoded {
	return decoded{kind: kindInvalid, err: &Error{Code: CodeParseError, Message: "parse error: " + err.Error()}}
}

// decodeMessage classifies one line. It never fails: every outcome is a kind. Params, result
// and an error's data may point into line (see own), and are valid JSON: what is not is a
// parse error. Most lines are decoded by scanEnvelope, in one pass; json.Unmarshal decodes
// the others.
func decodeMessage(line []byte) decoded {
	b := bytes.TrimLeft(line, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return decodeNonObject(b)
	}

	var w wireIn
	var typeErr *json.UnmarshalTypeError
	if !scanEnvelope(b, &w) {
		w = wireIn{}
		err := json.Unmarshal(b, &w)
		if err != nil && !errors.As(err, &typeErr) {
			return parseError(err)
		}
	}
	// Unmarshal goes on past a type error, so the other fields (the id among them) are filled in.
	methodBad := typeErr != nil && typeErr.Field == "method"
	id, idOK := parseID(w.ID)
	replyID := id
	if !idOK {
		replyID = ID{}
	}
	hasResult := len(w.Result) > 0
	hasError := len(w.Error) > 0 && string(w.Error) != "null"
	isResponse := w.Method == "" && !methodBad && (hasResult || hasError)

	if w.JSONRPC != "2.0" {
		if isResponse {
			return decoded{kind: kindIgnored, note: fmt.Sprintf("response %s without \"jsonrpc\":\"2.0\"", w.ID)}
		}
		return invalid(replyID, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if methodBad {
		return invalid(replyID, `invalid request: "method" must be a string`)
	}
	if w.Method != "" {
		return decodeRequest(&w, id, idOK)
	}
	if !isResponse {
		d := invalid(replyID, `invalid request: no "method", "result" or "error"`)
		d.bare = id.IsValid()
		return d
	}
	return decodeResponse(&w, id, idOK, hasError)
}

// decodeNonObject classifies a line that is not a JSON object: a parse error, a batch or
// another value, none of which is a message.
func decodeNonObject(b []byte) decoded {
	if !json.Valid(b) {
		// Unmarshal stops at its validity check, so this only produces the error text.
		return parseError(json.Unmarshal(b, new(json.RawMessage)))
	}
	if b[0] == '[' {
		return invalid(ID{}, "invalid request: batches are not supported; none of the requests in this batch was processed, and none will be answered")
	}
	return invalid(ID{}, "invalid request: not a JSON object")
}

// decodeRequest classifies a well-formed message with a method: a call, a notification, or
// invalid for an id of the wrong type.
func decodeRequest(w *wireIn, id ID, idOK bool) decoded {
	if !idOK {
		return invalid(ID{}, `invalid request: "id" must be a string, a number or null`)
	}
	params := json.RawMessage(w.Params)
	if len(params) == 0 || string(params) == "null" {
		params = nil
	}
	kind := kindNotification
	if id.IsValid() {
		kind = kindCall
	}
	return decoded{kind: kind, id: id, method: w.Method, params: params}
}

// decodeResponse classifies a response: its result or error, or ignored without a usable id.
func decodeResponse(w *wireIn, id ID, idOK, hasError bool) decoded {
	if !idOK || !id.IsValid() {
		// Typically the peer's reply to a line it could not parse.
		return decoded{kind: kindIgnored, note: fmt.Sprintf("response without a usable id: result=%.200s error=%.200s", w.Result, w.Error)}
	}
	if hasError {
		return decoded{kind: kindResponse, id: id, err: decodeErrorObject(json.RawMessage(w.Error))}
	}
	return decoded{kind: kindResponse, id: id, result: json.RawMessage(w.Result)}
}

// unmarshalValid decodes data, which the reader has found to be valid JSON, into v: an
// Unmarshaler is handed data directly, where json.Unmarshal would check it again first, a
// second scan of what may be a large result.
func unmarshalValid(data []byte, v any) error {
	if u, ok := v.(json.Unmarshaler); ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			return u.UnmarshalJSON(data)
		}
	}
	return json.Unmarshal(data, v)
}

// own copies what d holds of its line, so the line's buffer can be reused.
func (d *decoded) own() {
	d.params = bytes.Clone(d.params)
	d.result = bytes.Clone(d.result)
	if d.err != nil && d.err.Data != nil {
		d.err.Data = bytes.Clone(d.err.Data)
	}
}

func decodeErrorObject(raw json.RawMessage) *Error {
	var e Error
	if err := json.Unmarshal(raw, &e); err != nil {
		return &Error{Code: CodeInternalError, Message: "malformed error object in response", Data: raw}
	}
	return &e
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf keeps one large message from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

// encode marshals one message as compact JSON plus "\n". HTML escaping is off: the peer is a
// program, and \u003c only makes lines longer.
func encode(v any) (*bytes.Buffer, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		putBuf(buf)
		return nil, err
	}
	return buf, nil
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuf {
		bufPool.Put(buf)
	}
}
