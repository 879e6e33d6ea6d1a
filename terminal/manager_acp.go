package terminal

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

// The five terminal methods of acp.TerminalHandler. A Client that embeds a
// *Manager advertises clientCapabilities.terminal and serves them:
//
//	type client struct{ *terminal.Manager; … }
//
// With WatchTerminalOutput, a *Manager is also an agent's own terminal
// runtime for display.RunLocalCommand (display.LocalTerminals; checked in
// the display package's tests, since the runtime does not import it).
var _ acp.TerminalHandler = (*Manager)(nil)

// CreateTerminal serves terminal/create. An empty cwd string is treated
// like an absent one.
func (m *Manager) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	info, err := m.Create(ctx, m.requestOf(req))
	if err != nil {
		return nil, wireErr(err)
	}
	return &acp.CreateTerminalResponse{TerminalID: info.TerminalID}, nil
}

// requestOf is a terminal/create request in Go terms: on a pty when the
// manager's Options.PTY or the request's _meta (MetaPTY) asks for one,
// with a stdin pipe when its _meta asks for one (MetaStdin).
func (m *Manager) requestOf(req *acp.CreateTerminalRequest) Request {
	r := Request{
		SessionID:       req.SessionID,
		Command:         req.Command,
		Args:            req.Args,
		OutputByteLimit: req.OutputByteLimit,
		PTY:             ptyOf(req.Meta, m.cfg.pty),
		Stdin:           stdinOf(req.Meta),
	}
	if req.Cwd != nil {
		r.Cwd = *req.Cwd
	}
	if len(req.Env) > 0 {
		r.Env = make([]EnvVar, len(req.Env))
		for i, v := range req.Env {
			r.Env[i] = EnvVar{Name: v.Name, Value: v.Value}
		}
	}
	return r
}

// TerminalOutput serves terminal/output.
func (m *Manager) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	out, err := m.Output(ctx, req.SessionID, req.TerminalID)
	if err != nil {
		return nil, wireErr(err)
	}
	text, cut := fitEncoded(out.Text, m.cfg.maxEncoded)
	resp := &acp.TerminalOutputResponse{Output: text, Truncated: out.Truncated || cut}
	resp.ExitStatus = out.ExitStatus
	return resp, nil
}

// WaitForTerminalExit serves terminal/wait_for_exit. A cancelled request
// ($/cancel_request) returns context.Canceled, which the connection sends
// as -32800; the command keeps running.
func (m *Manager) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	st, err := m.Wait(ctx, req.SessionID, req.TerminalID)
	if err != nil {
		return nil, wireErr(err)
	}
	return &acp.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

// KillTerminal serves terminal/kill.
func (m *Manager) KillTerminal(ctx context.Context, req *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	if err := m.Kill(ctx, req.SessionID, req.TerminalID); err != nil {
		return nil, wireErr(err)
	}
	return &acp.KillTerminalResponse{}, nil
}

// ReleaseTerminal serves terminal/release.
func (m *Manager) ReleaseTerminal(ctx context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if err := m.Release(ctx, req.SessionID, req.TerminalID); err != nil {
		return nil, wireErr(err)
	}
	return &acp.ReleaseTerminalResponse{}, nil
}

// acpError is a terminal error as the acp connection sends it: code is
// the acp sentinel of its kind, so that acp.WireError finds the code, and
// text is what the agent reads. errors.Is still sees the kind.
type acpError struct {
	code *acp.Error
	err  *Error
	text string
}

func (e *acpError) Error() string   { return e.text }
func (e *acpError) Unwrap() []error { return []error{e.code, e.err} }

// wireErr maps the manager's errors to wire codes, the one place where
// kinds become codes: not found and invalid are invalid params, denied is
// acp.CodePermissionDenied, closed and host failures are internal errors.
// Other errors (context.Canceled from a cancelled request) pass through.
func wireErr(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case ErrNotFound, ErrInvalid:
		return &acpError{acp.ErrInvalidParams, e, acp.ErrInvalidParams.Message + ": " + e.Message}
	case ErrDenied:
		return &acpError{acp.ErrPermissionDenied, e, e.Message} // already "permission denied: …"
	default:
		return &acpError{acp.ErrInternal, e, acp.ErrInternal.Message + ": " + e.Message}
	}
}

// fitEncoded returns the longest suffix of text, starting at a character,
// whose JSON string encoding takes at most budget bytes, and whether it had
// to cut. text is valid UTF-8.
func fitEncoded(text string, budget int) (string, bool) {
	if len(text)*6 <= budget { // no text can grow more than six times
		return text, false
	}
	used := 0
	for i := len(text); i > 0; {
		if b := text[i-1]; b < utf8.RuneSelf { // the common case, by table
			used += int(asciiEncodedLen[b])
			if used > budget {
				return text[i:], true
			}
			i--
			continue
		}
		r, size := utf8.DecodeLastRuneInString(text[:i])
		used += encodedLen(r, size)
		if used > budget {
			return text[i:], true
		}
		i -= size
	}
	return text, false
}

// asciiEncodedLen is encodedLen for each ASCII byte.
var asciiEncodedLen = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		t[b] = uint8(encodedLen(rune(b), 1))
	}
	return t
}()

// encodedLen is how many bytes encoding/json writes for the rune r of
// size bytes inside a string, counting HTML escaping in, since it is on by
// default.
func encodedLen(r rune, size int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError && size == 1:
		return 6 // written as \ufffd
	}
	return size
}

// WatchTerminalOutput calls fn with the terminal's output from its start,
// in order, until the command has exited and its output is drained (it
// returns nil) or ctx ends (ctx's error). dropped counts bytes lost just
// before data because fn fell behind (see Subscribe); a loss at the very
// end comes as a call with no data. fn must not keep data. It serves
// display.LocalTerminals, so that an agent can run commands in its own
// Manager with display.RunLocalCommand.
func (m *Manager) WatchTerminalOutput(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, fn func(data []byte, dropped uint64)) error {
	sub, err := m.Subscribe(sessionID, terminalID)
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		ev, err := sub.Next(ctx)
		switch {
		case errors.Is(err, ErrSubscriptionClosed):
			return nil
		case err != nil:
			return err
		}
		switch ev.Kind {
		case EventOutput:
			fn(ev.Data, ev.Dropped)
		case EventExited, EventReleased:
			if ev.Dropped > 0 {
				fn(nil, ev.Dropped)
			}
			return nil
		}
	}
}
