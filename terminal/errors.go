package terminal

import (
	"errors"
	"fmt"
)

// JSON-RPC error codes the manager's errors carry (see Error).
const (
	// CodeInvalidParams: a bad request (relative or missing cwd, bad env
	// name, missing executable) or an unknown, released or foreign terminal.
	CodeInvalidParams int64 = -32602
	// CodeInternalError: the host failed (pipe, fork, closed manager).
	CodeInternalError int64 = -32603
	// CodeDenied: the policy refused a terminal/create (Policy.Decide, the
	// per-session limit, a cwd outside Policy.Roots). ACP reserves -32000
	// (auth_required) and -32002 (resource_not_found); -32003 is free in
	// the implementation-defined range.
	CodeDenied int64 = -32003
)

// Kinds of failure, for errors.Is. Every error the manager returns for a
// request wraps an *Error, which wraps one of these.
var (
	// ErrNotFound: no such terminal in this session. The same error (and
	// message) is returned for a terminal that never existed, one already
	// released and one that belongs to another session.
	ErrNotFound = errors.New("terminal not found")
	// ErrInvalid: the request is malformed or names something that does not
	// exist (cwd, executable).
	ErrInvalid = errors.New("invalid terminal request")
	// ErrDenied: the policy refused the request.
	ErrDenied = errors.New("permission denied")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("terminal manager closed")
)

// Error is a request failure with the JSON-RPC code it maps to. Message is
// the whole text (it is what Error returns); Kind is one of ErrNotFound,
// ErrInvalid, ErrDenied, ErrClosed or nil for other internal failures.
type Error struct {
	Code    int64
	Kind    error
	Message string
	Err     error // underlying cause, if any
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// ErrorCode returns the JSON-RPC code err maps to when it wraps an *Error,
// else CodeInternalError.
func ErrorCode(err error) int64 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternalError
}

func notFound(terminalID string) error {
	return &Error{Code: CodeInvalidParams, Kind: ErrNotFound,
		Message: fmt.Sprintf("terminal %q not found", terminalID)}
}

func invalidf(format string, args ...any) error {
	return &Error{Code: CodeInvalidParams, Kind: ErrInvalid, Message: fmt.Sprintf(format, args...)}
}

func invalidErr(err error, format string, args ...any) error {
	return &Error{Code: CodeInvalidParams, Kind: ErrInvalid, Message: fmt.Sprintf(format, args...), Err: err}
}

func deniedf(format string, args ...any) error {
	return &Error{Code: CodeDenied, Kind: ErrDenied,
		Message: "permission denied: " + fmt.Sprintf(format, args...)}
}

func internalErr(err error, format string, args ...any) error {
	return &Error{Code: CodeInternalError, Message: fmt.Sprintf(format, args...), Err: err}
}

func errClosed() error {
	return &Error{Code: CodeInternalError, Kind: ErrClosed, Message: ErrClosed.Error()}
}
