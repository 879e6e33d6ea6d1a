package mcpexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Codex's defaults and bounds for its exec_command and write_stdin tools,
// which models are trained on.
const (
	// DefaultExecYield is how long exec_command waits for the command to
	// end before it answers with a session ID.
	DefaultExecYield = 10 * time.Second
	// DefaultWriteYield is how long write_stdin waits for more output.
	DefaultWriteYield = 250 * time.Millisecond
	// MinYield and MaxYield bound yield_time_ms.
	MinYield = 250 * time.Millisecond
	MaxYield = 30 * time.Second
	// DefaultMaxOutputTokens bounds the output of one answer, counted as
	// Codex does, at four bytes a token.
	DefaultMaxOutputTokens = 10_000
	// MaxOutputTokens is the most max_output_tokens may ask for.
	MaxOutputTokens = 256 << 10
	bytesPerToken   = 4
)

// maxArgBytes bounds cmd and chars: a command line or an input larger
// than this is refused before anything is copied further.
const maxArgBytes = 1 << 20

// execArgs are exec_command's arguments, decoded and checked.
type execArgs struct {
	Cmd       string
	Workdir   string
	TTY       bool
	Yield     time.Duration
	MaxTokens int
	Shell     string
	Login     bool
}

// writeArgs are write_stdin's arguments, decoded and checked.
type writeArgs struct {
	SessionID int
	Chars     string
	Yield     time.Duration
	MaxTokens int
}

// sessionArgs are the arguments of the tools that name a session only.
type sessionArgs struct {
	SessionID int
}

// argError is a bad argument: the model gets its text as a tool error.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &argError{fmt.Sprintf(format, args...)}
}

// decodeObject decodes raw (the arguments object; absent means {}) into
// v, naming the field a type error is about.
func decodeObject(tool string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return argErrorf("%s: the arguments must be a JSON object", tool)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return argErrorf("%s: %s must be %s, not %s", tool, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		var ae *argError
		if errors.As(err, &ae) {
			return argErrorf("%s: %s", tool, ae.msg)
		}
		return argErrorf("%s: bad arguments: %v", tool, err)
	}
	return nil
}

// jsonKind names a Go kind as a JSON type, for messages.
func jsonKind(k string) string {
	switch {
	case k == "string":
		return "a string"
	case k == "bool":
		return "a boolean"
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	}
	return "a " + k
}

// decodeExec decodes exec_command's arguments. Fields it does not know
// (Codex's justification, sandbox_permissions) are ignored.
func decodeExec(raw json.RawMessage) (execArgs, error) {
	var a struct {
		Cmd       *string `json:"cmd"`
		Workdir   *string `json:"workdir"`
		TTY       *bool   `json:"tty"`
		Yield     *int64  `json:"yield_time_ms"`
		MaxTokens *int64  `json:"max_output_tokens"`
		Shell     *string `json:"shell"`
		Login     *bool   `json:"login"`
	}
	if err := decodeObject("exec_command", raw, &a); err != nil {
		return execArgs{}, err
	}
	if a.Cmd == nil || strings.TrimSpace(*a.Cmd) == "" {
		return execArgs{}, argErrorf("exec_command: cmd is required: the shell command line to run")
	}
	out := execArgs{Cmd: *a.Cmd, TTY: deref(a.TTY), Login: deref(a.Login), Workdir: deref(a.Workdir), Shell: deref(a.Shell)}
	if err := checkText("exec_command", "cmd", out.Cmd); err != nil {
		return execArgs{}, err
	}
	if err := checkText("exec_command", "workdir", out.Workdir); err != nil {
		return execArgs{}, err
	}
	if err := checkText("exec_command", "shell", out.Shell); err != nil {
		return execArgs{}, err
	}
	var err error
	if out.Yield, err = yield("exec_command", a.Yield, DefaultExecYield); err != nil {
		return execArgs{}, err
	}
	if out.MaxTokens, err = maxTokens("exec_command", a.MaxTokens); err != nil {
		return execArgs{}, err
	}
	return out, nil
}

// decodeWrite decodes write_stdin's arguments.
func decodeWrite(raw json.RawMessage) (writeArgs, error) {
	var a struct {
		SessionID *sessionNumber `json:"session_id"`
		Chars     *string        `json:"chars"`
		Yield     *int64         `json:"yield_time_ms"`
		MaxTokens *int64         `json:"max_output_tokens"`
	}
	if err := decodeObject("write_stdin", raw, &a); err != nil {
		return writeArgs{}, err
	}
	if a.SessionID == nil {
		return writeArgs{}, argErrorf("write_stdin: session_id is required: the number exec_command answered with")
	}
	out := writeArgs{SessionID: int(*a.SessionID), Chars: deref(a.Chars)}
	if len(out.Chars) > maxArgBytes {
		return writeArgs{}, argErrorf("write_stdin: chars is %d bytes, more than the %d one call may send", len(out.Chars), maxArgBytes)
	}
	var err error
	if out.Yield, err = yield("write_stdin", a.Yield, DefaultWriteYield); err != nil {
		return writeArgs{}, err
	}
	if out.MaxTokens, err = maxTokens("write_stdin", a.MaxTokens); err != nil {
		return writeArgs{}, err
	}
	return out, nil
}

// decodeSession decodes the arguments of kill_session.
func decodeSession(tool string, raw json.RawMessage) (sessionArgs, error) {
	var a struct {
		SessionID *sessionNumber `json:"session_id"`
	}
	if err := decodeObject(tool, raw, &a); err != nil {
		return sessionArgs{}, err
	}
	if a.SessionID == nil {
		return sessionArgs{}, argErrorf("%s: session_id is required", tool)
	}
	return sessionArgs{SessionID: int(*a.SessionID)}, nil
}

// sessionNumber is a session ID: an integer, as Codex's tools take it,
// or a string of digits, which some models send.
type sessionNumber int

func (n *sessionNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return &argError{fmt.Sprintf("session_id must be a session number, not %.40s", b)}
	}
	*n = sessionNumber(v)
	return nil
}

// yield clamps yield_time_ms to [MinYield, MaxYield], as Codex does; a
// negative value is refused.
func yield(tool string, ms *int64, def time.Duration) (time.Duration, error) {
	if ms == nil {
		return def, nil
	}
	if *ms < 0 {
		return 0, argErrorf("%s: yield_time_ms must not be negative, not %d", tool, *ms)
	}
	d := time.Duration(min(*ms, int64(MaxYield/time.Millisecond))) * time.Millisecond
	return min(max(d, MinYield), MaxYield), nil
}

func maxTokens(tool string, n *int64) (int, error) {
	if n == nil {
		return DefaultMaxOutputTokens, nil
	}
	if *n <= 0 {
		return 0, argErrorf("%s: max_output_tokens must be positive, not %d", tool, *n)
	}
	return int(min(*n, MaxOutputTokens)), nil
}

// checkText refuses a NUL (no exec or path can carry one) and text
// larger than maxArgBytes.
func checkText(tool, field, s string) error {
	if len(s) > maxArgBytes {
		return argErrorf("%s: %s is %d bytes, more than the %d allowed", tool, field, len(s), maxArgBytes)
	}
	if strings.ContainsRune(s, 0) {
		return argErrorf("%s: %s contains a NUL byte", tool, field)
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
