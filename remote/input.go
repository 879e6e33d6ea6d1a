package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// Input over the connection: the Client's side of terminal.Input and the
// exec server's, for terminals created with a pty (terminal.MetaPTY) or
// a stdin pipe (terminal.MetaStdin).

var _ terminal.Input = (*Client)(nil)

// inputBound bounds CloseStdin and Resize, which take no ctx: each is one
// quick call, and a target that does not answer it within the bound is
// as good as lost.
const inputBound = 15 * time.Second

// Write sends data to a terminal's stdin or pty on the target, as
// terminal.Manager.Write does locally: at most terminal.MaxStdinWrite
// bytes, returning once all of it is in the pipe there, or with an error
// when ctx ends (the target's write is then cancelled too; n is 0, since
// the target's count is not waited for), the command exits or its stdin
// is closed (an error wrapping terminal.ErrInvalid and
// terminal.ErrStdinClosed, with n what went in). A target whose exec
// server is of an earlier release takes no input: every call fails with
// an error wrapping terminal.ErrInvalid, without asking it.
func (c *Client) Write(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, data []byte) (int, error) {
	if err := c.canInput("write to"); err != nil {
		return 0, err
	}
	if len(data) > terminal.MaxStdinWrite {
		return 0, refused(acp.CodeInvalidParams, terminal.ErrInvalid,
			fmt.Sprintf("invalid params: %d bytes for terminal %q's stdin: at most %d bytes per write", len(data), clip(string(terminalID), 64), terminal.MaxStdinWrite))
	}
	var resp WriteResponse
	err := c.call(ctx, MethodWrite, &WriteRequest{SessionID: sessionID, TerminalID: terminalID, Data: data}, &resp)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) {
			return min(max(se.written, 0), len(data)), err
		}
		return 0, err
	}
	if resp.N != len(data) {
		// Only a target that lies says so: a short write is an error there.
		return 0, fmt.Errorf("remote: write: the exec server says it wrote %d of %d bytes, without an error", resp.N, len(data))
	}
	return resp.N, nil
}

// CloseStdin ends a terminal's input on the target, as
// terminal.Manager.CloseStdin: the command reads end of file after what
// was written. It is bounded by inputBound.
func (c *Client) CloseStdin(sessionID acp.SessionID, terminalID acp.TerminalID) error {
	if err := c.canInput("close the stdin of"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.grantCtx, inputBound)
	defer cancel()
	return c.inputCall(ctx, MethodCloseStdin, &TerminalRequest{SessionID: sessionID, TerminalID: terminalID})
}

// Resize changes a pty terminal's size on the target, as
// terminal.Manager.Resize; a zero field keeps that dimension. It is
// bounded by inputBound.
func (c *Client) Resize(sessionID acp.SessionID, terminalID acp.TerminalID, size terminal.Size) error {
	if err := c.canInput("resize"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.grantCtx, inputBound)
	defer cancel()
	return c.inputCall(ctx, MethodResize, &ResizeRequest{SessionID: sessionID, TerminalID: terminalID, Size: Size(size)})
}

// inputCall is a call without a result, whose ctx ends with the
// connection: a closed client says ErrDisconnected, not "canceled".
func (c *Client) inputCall(ctx context.Context, method string, params any) error {
	err := c.call(ctx, method, params, nil)
	if err != nil && c.grantCtx.Err() != nil && errors.Is(err, context.Canceled) {
		return c.endErr()
	}
	return err
}

// canInput refuses input to an exec server that does not serve it (an
// earlier release), before anything is sent.
func (c *Client) canInput(what string) error {
	if c.hello.Input {
		return nil
	}
	v := c.hello.Version
	if v == "" {
		v = "an earlier release"
	}
	return refused(acp.CodeInvalidParams, terminal.ErrInvalid,
		fmt.Sprintf("invalid params: cannot %s a terminal there: the exec server on the target (%s) takes no input; update acpterm there", what, clip(v, 64)))
}

// The exec server's side.

// writeErr is a failed write and what went in before it failed.
type writeErr struct {
	n   int
	err error
}

func (e *writeErr) Error() string { return e.err.Error() }
func (e *writeErr) Unwrap() error { return e.err }

func (s *server) write(ctx context.Context, req *WriteRequest) (any, error) {
	n, err := s.mgr.Write(ctx, req.SessionID, req.TerminalID, req.Data)
	if err != nil {
		return nil, &writeErr{n: n, err: inputErr(err)}
	}
	return &WriteResponse{N: n}, nil
}

func (s *server) closeStdin(_ context.Context, req *TerminalRequest) (any, error) {
	if err := s.mgr.CloseStdin(req.SessionID, req.TerminalID); err != nil {
		return nil, inputErr(err)
	}
	return struct{}{}, nil
}

func (s *server) resize(_ context.Context, req *ResizeRequest) (any, error) {
	if err := s.mgr.Resize(req.SessionID, req.TerminalID, terminal.Size(req.Size)); err != nil {
		return nil, inputErr(err)
	}
	return struct{}{}, nil
}

// inputErr gives an input call's refusal (no such terminal, no stdin, a
// closed one, a bad size) the code terminal/* calls answer it with:
// invalid params. Other failures stay internal errors.
func inputErr(err error) error {
	if errors.Is(err, terminal.ErrInvalid) || errors.Is(err, terminal.ErrNotFound) {
		return fmt.Errorf("%w: %w", acp.ErrInvalidParams, err)
	}
	return err
}
