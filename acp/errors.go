package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// Error is an ACP (JSON-RPC) error object. Handlers return it, usually wrapped
// with %w, to choose the code the peer sees; calls return it when the peer
// answered with an error.
//
// Two *Error values match under errors.Is when their codes are equal, so
// errors.Is(err, acp.ErrInvalidParams) holds for an invalid-params error
// received from a peer as well as for one made here.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error codes defined by JSON-RPC 2.0 and ACP, and the one acpterm adds.
const (
	CodeParseError       int64 = -32700
	CodeInvalidRequest   int64 = -32600
	CodeMethodNotFound   int64 = -32601
	CodeInvalidParams    int64 = -32602
	CodeInternalError    int64 = -32603
	CodeRequestCancelled int64 = -32800
	CodeAuthRequired     int64 = -32000
	CodeResourceNotFound int64 = -32002
	// CodePermissionDenied is acpterm's code for a request the client's
	// policy refused, such as a terminal/create its policy or sandbox does
	// not allow. ACP reserves -32000 (auth_required) and -32002
	// (resource_not_found); -32003 is free in the implementation-defined
	// range. Asking again will not change the answer.
	CodePermissionDenied int64 = -32003
)

// Sentinel errors, one per code above (parse errors aside). Wrap them to
// keep their code:
//
//	return nil, fmt.Errorf("%w: terminal %q", acp.ErrInvalidParams, id)
var (
	ErrInvalidParams    = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal         = &Error{Code: CodeInternalError, Message: "internal error"}
	ErrMethodNotFound   = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrResourceNotFound = &Error{Code: CodeResourceNotFound, Message: "resource not found"}
	ErrAuthRequired     = &Error{Code: CodeAuthRequired, Message: "authentication required"}
	ErrRequestCancelled = &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	ErrInvalidRequest   = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied, Message: "permission denied"}
)

// ErrConnClosed is returned (wrapped) by calls on a connection that has ended:
// the peer closed its end, exited, or Close was called.
var ErrConnClosed = jsonrpc2.ErrClosed

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("acp error %d", e.Code)
	}
	return e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// PeerError is how a call returns an error answer from the peer: the
// peer's *Error, and the method it answered. It unwraps to the *Error, so
// errors.As(err, &e) with e an *Error and errors.Is(err, ErrInvalidParams)
// see the peer's code.
//
// It exists for one rule of WireError: a handler that returns the error of
// its own call to the peer does not pass the peer's code off as its own.
// An agent whose terminal/create was refused with -32602 did not get
// invalid params in its session/prompt; forwarded as it is, the error is
// sent as -32603 with the peer's error in its data. A handler that means
// the code wraps a sentinel in front of it:
//
//	fmt.Errorf("%w: %w", acp.ErrInvalidParams, err)
type PeerError struct {
	Method string // the method the peer answered; "" when not known
	Err    *Error
}

func (e *PeerError) Error() string { return e.Err.Error() }

// Unwrap returns the peer's *Error.
func (e *PeerError) Unwrap() error { return e.Err }

// ErrorCode is the code err carries: that of the first *Error in its chain
// (the peer's code, for an error a call returned), else the code WireError
// gives it; 0 for nil. For what a handler returning err sends, use
// WireError, which does not forward a peer's code as is.
func ErrorCode(err error) int64 {
	if err == nil {
		return 0
	}
	if e, ok := errors.AsType[*Error](err); ok && e != nil {
		return e.Code
	}
	return WireError(err).Code
}

// WireError maps any error to the error object sent to the peer:
//   - an error answer from a peer (PeerError) that is the first *Error in
//     the chain is -32603, with the whole chain's text as message and
//     {"method": ..., "error": {the peer's error}} as data, so that a
//     handler forwarding its own call's failure does not answer with the
//     peer's code; wrapping a sentinel such as ErrInvalidParams in front
//     of it (fmt.Errorf("%w: %w", ...)) chooses the code;
//   - a wrapped *Error keeps its code and data, and the message is the whole
//     chain's text (so the context added while wrapping reaches the peer);
//   - context.Canceled (a cancelled request) is -32800;
//   - a JSON decoding failure (malformed params) is -32602;
//   - anything else is -32603 with the error's text.
//
// A nil error maps to nil.
func WireError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if pe, ok := errors.AsType[*PeerError](err); ok && pe.Err == e {
			return forwarded(err, pe)
		}
		return &Error{Code: e.Code, Message: err.Error(), Data: e.Data}
	}
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		msg := err.Error()
		if err == error(re) {
			msg = re.Message
		}
		return &Error{Code: re.Code, Message: msg, Data: re.Data}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: CodeRequestCancelled, Message: err.Error()}
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return &Error{Code: CodeInvalidParams, Message: err.Error()}
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// forwarded is the wire error for a peer's error answer that a handler
// returned as its own: internal, with the peer's error in the data.
func forwarded(err error, pe *PeerError) *Error {
	data, merr := json.Marshal(struct {
		Method string `json:"method,omitempty"`
		Error  *Error `json:"error"`
	}{pe.Method, pe.Err})
	if merr != nil {
		// Only the peer's data can fail to encode (it was valid JSON when
		// it arrived, but a caller may have changed it).
		data = nil
	}
	return &Error{Code: CodeInternalError, Message: err.Error(), Data: data}
}

// toRPCError adapts WireError to the engine's error type.
func toRPCError(err error) *jsonrpc2.Error {
	e := WireError(err)
	return &jsonrpc2.Error{Code: e.Code, Message: e.Message, Data: e.Data}
}

// fromRPCError turns an error response received from the peer into a
// *PeerError; other errors (closed connection, cancelled context) pass
// through.
func fromRPCError(err error) error { return peerCallError("", err) }

// peerCallError is fromRPCError for a call of method.
func peerCallError(method string, err error) error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return &PeerError{Method: method, Err: &Error{Code: re.Code, Message: re.Message, Data: re.Data}}
	}
	return err
}
