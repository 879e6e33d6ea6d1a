package terminal

import (
	"errors"
	"fmt"
	"github.com/acpterm/acpterm/acp"
)

// Kinds of failure, for errors.Is. Every error the manager returns for a
// request is an *Error whose Kind is one of these, or nil for a failure of
// the host; a request cancelled through its ctx returns ctx's error.
// Serving ACP, the manager maps each kind to its wire code (see the
// package doc).
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
	// ErrClosed: the manager was closed, or the request's session was
	// released (ReleaseSession) while the request waited.
	ErrClosed = errors.New("terminal manager closed")
)

// errSessionReleased is the cause of a create whose session was released
// while it waited.
var errSessionReleased = errors.New("session released")

// Error is a request failure. Message is the whole text (it is what Error
// returns); Kind is one of ErrNotFound, ErrInvalid, ErrDenied, ErrClosed,
// or nil when the host failed (a pipe, a fork).
type Error struct {
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

func notFound(terminalID acp.TerminalID) error {
	return &Error{Kind: ErrNotFound, Message: fmt.Sprintf("terminal %q not found", terminalID)}
}

func invalidf(format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Message: fmt.Sprintf(format, args...)}
}

func invalidErr(err error, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Message: fmt.Sprintf(format, args...), Err: err}
}

// deniedErr is a refusal; its message starts with "permission denied: ".
func deniedErr(err error, format string, args ...any) error {
	return &Error{Kind: ErrDenied, Message: "permission denied: " + fmt.Sprintf(format, args...), Err: err}
}

func deniedf(format string, args ...any) error { return deniedErr(nil, format, args...) }

func internalErr(err error, format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...), Err: err}
}

func sessionReleased(sessionID acp.SessionID) error {
	return &Error{Kind: ErrClosed, Message: fmt.Sprintf("session %q was released while the terminal was being created", sessionID), Err: errSessionReleased}
}

func errClosed() error {
	return &Error{Kind: ErrClosed, Message: ErrClosed.Error()}
}
