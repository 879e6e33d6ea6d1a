package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// Typing into terminals: acpterm's extension to ACP, which has no input,
// resize or pty in either version. An agent that knows it asks
// terminal/create for a pseudo-terminal or a stdin pipe in the request's
// _meta, and writes to the terminal, closes its stdin or resizes it with
// three extension methods. A client says which of these it serves with
// the same keys, true, in clientCapabilities._meta:
//
//	{"_meta": {"acpterm/pty": true, "acpterm/stdin": true, "acpterm/input": true}}
const (
	// MetaTerminalPTY, in terminal/create's _meta, asks for a
	// pseudo-terminal: {"cols": N, "rows": M}, either left out or zero
	// for the client's default. A client that serves it advertises it.
	MetaTerminalPTY = "acpterm/pty"
	// MetaTerminalStdin, true in terminal/create's _meta, asks for a pipe
	// as the command's stdin, which the agent writes with
	// MethodTerminalWrite; without it a pipe terminal's stdin is
	// /dev/null. A client that serves it advertises it.
	MetaTerminalStdin = "acpterm/stdin"
	// MetaTerminalInput, true in clientCapabilities._meta, says that the
	// client serves the three methods below. ClientConn advertises it
	// when its Client is a TerminalInputHandler.
	MetaTerminalInput = "acpterm/input"
)

// The input methods, agent to client. Like every extension method their
// names start with "_"; a client that does not serve them answers -32601.
const (
	// MethodTerminalWrite writes UTF-8 text to a terminal's stdin or pty:
	// {sessionId, terminalId, data} → {}, answered once the text went in.
	MethodTerminalWrite = "_acpterm/terminal/write"
	// MethodTerminalCloseStdin closes a terminal's stdin, so that the
	// command reads end of file: {sessionId, terminalId} → {}.
	MethodTerminalCloseStdin = "_acpterm/terminal/close_stdin"
	// MethodTerminalResize resizes a pty terminal:
	// {sessionId, terminalId, cols, rows} → {}.
	MethodTerminalResize = "_acpterm/terminal/resize"
)

// WriteTerminalRequest is MethodTerminalWrite's params.
type WriteTerminalRequest struct {
	SessionID  SessionID  `json:"sessionId"`
	TerminalID TerminalID `json:"terminalId"`
	// Data is the text written, as it is: a line needs its "\n" (a pipe)
	// or "\r" (a pty, as the Enter key sends).
	Data string `json:"data"`
	Meta Meta   `json:"_meta,omitempty"`
}

// WriteTerminalResponse is MethodTerminalWrite's result.
type WriteTerminalResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// CloseTerminalStdinRequest is MethodTerminalCloseStdin's params.
type CloseTerminalStdinRequest struct {
	SessionID  SessionID  `json:"sessionId"`
	TerminalID TerminalID `json:"terminalId"`
	Meta       Meta       `json:"_meta,omitempty"`
}

// CloseTerminalStdinResponse is MethodTerminalCloseStdin's result.
type CloseTerminalStdinResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// ResizeTerminalRequest is MethodTerminalResize's params: the size in
// character cells, as v2's TerminalSize.
type ResizeTerminalRequest struct {
	SessionID  SessionID  `json:"sessionId"`
	TerminalID TerminalID `json:"terminalId"`
	Cols       uint16     `json:"cols"`
	Rows       uint16     `json:"rows"`
	Meta       Meta       `json:"_meta,omitempty"`
}

// ResizeTerminalResponse is MethodTerminalResize's result.
type ResizeTerminalResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// TerminalInputHandler serves the input methods (MethodTerminalWrite,
// MethodTerminalCloseStdin, MethodTerminalResize), on v1 and v2
// connections alike. A Client that implements it advertises
// MetaTerminalInput; package terminal serves it on any terminal.Input
// (terminal.InputHandler). The params reach it checked: both ids set.
type TerminalInputHandler interface {
	WriteTerminal(ctx context.Context, req *WriteTerminalRequest) (*WriteTerminalResponse, error)
	CloseTerminalStdin(ctx context.Context, req *CloseTerminalStdinRequest) (*CloseTerminalStdinResponse, error)
	ResizeTerminal(ctx context.Context, req *ResizeTerminalRequest) (*ResizeTerminalResponse, error)
}

// ErrNoTerminalInput is returned, without a round trip, by the input
// methods of a TerminalHandle, and by CreateTerminalWith for options the
// client did not advertise in clientCapabilities._meta.
var ErrNoTerminalInput = errors.New("acp: the client does not serve acpterm's terminal input")

// serveTerminalInput serves an input method with the client, and reports
// false for any other method (and for one sent as a notification). Without h the methods are unknown, with a message
// that says so.
func serveTerminalInput(ctx context.Context, client Client, req *jsonrpc2.Request) (any, bool, error) {
	method, params := req.Method, req.Params
	switch method {
	case MethodTerminalWrite, MethodTerminalCloseStdin, MethodTerminalResize:
		if !req.IsCall() {
			return nil, false, nil // a notification: nobody hears the answer
		}
	default:
		return nil, false, nil
	}
	h, ok := client.(TerminalInputHandler)
	if !ok {
		if _, ext := client.(ExtHandler); ext {
			return nil, false, nil // the client's own extension handler decides
		}
		return nil, true, unsupported(method)
	}
	var res any
	var err error
	switch method {
	case MethodTerminalWrite:
		res, err = serveInput(ctx, params, h.WriteTerminal)
	case MethodTerminalCloseStdin:
		res, err = serveInput(ctx, params, h.CloseTerminalStdin)
	default:
		res, err = serveInput(ctx, params, h.ResizeTerminal)
	}
	return res, true, err
}

// inputRequest is one of the three requests: its ids, checked before the
// handler runs.
type inputRequest interface {
	ids() (SessionID, TerminalID)
}

func (r *WriteTerminalRequest) ids() (SessionID, TerminalID)      { return r.SessionID, r.TerminalID }
func (r *CloseTerminalStdinRequest) ids() (SessionID, TerminalID) { return r.SessionID, r.TerminalID }
func (r *ResizeTerminalRequest) ids() (SessionID, TerminalID)     { return r.SessionID, r.TerminalID }

// serveInput decodes an input method's params, which must be an object
// with both ids, and runs f.
func serveInput[Req any, Resp any, P interface {
	*Req
	inputRequest
}](ctx context.Context, params json.RawMessage, f func(context.Context, P) (*Resp, error)) (any, error) {
	p, err := decodeInputParams[Req, P](params)
	if err != nil {
		return nil, err
	}
	return answer(f(ctx, p))
}

// decodeInputParams decodes params strictly enough for hostile input: an
// object, fields of the right types, both ids non-empty. Unknown fields
// are ignored, as everywhere in ACP.
func decodeInputParams[Req any, P interface {
	*Req
	inputRequest
}](params json.RawMessage) (P, error) {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: params must be an object", ErrInvalidParams)
	}
	p := P(new(Req))
	if err := json.Unmarshal(t, p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	sid, tid := p.ids()
	switch {
	case sid == "":
		return nil, fmt.Errorf("%w: sessionId is missing", ErrInvalidParams)
	case tid == "":
		return nil, fmt.Errorf("%w: terminalId is missing", ErrInvalidParams)
	}
	return p, nil
}

// withInputCapability returns meta with MetaTerminalInput set when
// client serves the input methods; meta itself is not changed.
func withInputCapability(client Client, meta Meta) Meta {
	if _, ok := client.(TerminalInputHandler); !ok {
		return meta
	}
	out := make(Meta, len(meta)+1)
	maps.Copy(out, meta)
	out[MetaTerminalInput] = json.RawMessage("true")
	return out
}

// metaTrue reports whether meta has key set to true, or to an object (the
// form MetaTerminalPTY takes in a request).
func metaTrue(meta Meta, key string) bool {
	t := bytes.TrimSpace(meta[key])
	return string(t) == "true" || len(t) > 0 && t[0] == '{'
}

// ServesTerminalInput reports whether the client advertised
// MetaTerminalInput: that the TerminalHandle's Write, CloseStdin and
// Resize will reach it.
func (a *AgentConn) ServesTerminalInput() bool {
	return metaTrue(a.ClientCapabilities().Meta, MetaTerminalInput)
}

// TerminalOptions are acpterm's extensions to terminal/create, which
// CreateTerminalWith puts in the request's _meta. The zero value asks
// for nothing: the command runs on pipes with /dev/null as its stdin.
type TerminalOptions struct {
	// PTY runs the command on a pseudo-terminal of this size (a zero
	// field: the client's default, 80x24 in acpterm): it sees a terminal
	// (colours, prompts, full-screen programs), the agent reads its
	// rendered screen, and types into it with Write.
	PTY *V2TerminalSize
	// Stdin gives a pipe terminal a stdin that Write writes and
	// CloseStdin closes. A pty terminal takes input in any case.
	Stdin bool
}

// CreateTerminalWith is CreateTerminal with acpterm's extensions: it sets
// MetaTerminalPTY and MetaTerminalStdin in a copy of req's _meta. It
// fails with ErrNoTerminalInput, before anything is sent, when the client
// did not advertise what opts ask for, rather than have a command that
// waits for input run without a way to give it any.
func (a *AgentConn) CreateTerminalWith(ctx context.Context, req *CreateTerminalRequest, opts *TerminalOptions) (*TerminalHandle, error) {
	if opts == nil || opts.PTY == nil && !opts.Stdin {
		return a.CreateTerminal(ctx, req)
	}
	if req == nil {
		req = &CreateTerminalRequest{}
	}
	caps := a.ClientCapabilities().Meta
	var missing []string
	if opts.PTY != nil && !metaTrue(caps, MetaTerminalPTY) {
		missing = append(missing, MetaTerminalPTY)
	}
	if opts.Stdin && (!metaTrue(caps, MetaTerminalStdin) || !metaTrue(caps, MetaTerminalInput)) {
		missing = append(missing, MetaTerminalStdin)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: clientCapabilities._meta lacks %s", ErrNoTerminalInput, strings.Join(missing, ", "))
	}
	r := *req
	r.Meta = make(Meta, len(req.Meta)+2)
	maps.Copy(r.Meta, req.Meta)
	if opts.PTY != nil {
		size, err := json.Marshal(struct {
			Cols uint16 `json:"cols,omitempty"`
			Rows uint16 `json:"rows,omitempty"`
		}{opts.PTY.Cols, opts.PTY.Rows})
		if err != nil {
			return nil, err
		}
		r.Meta[MetaTerminalPTY] = size
	}
	if opts.Stdin {
		r.Meta[MetaTerminalStdin] = json.RawMessage("true")
	}
	return a.CreateTerminal(ctx, &r)
}

// inputLive checks that the handle can send an input method.
func (t *TerminalHandle) inputLive() error {
	if err := t.live(); err != nil {
		return err
	}
	if !t.conn.ServesTerminalInput() {
		return fmt.Errorf("%w: clientCapabilities._meta lacks %s", ErrNoTerminalInput, MetaTerminalInput)
	}
	return nil
}

// Write sends MethodTerminalWrite: data goes to the command's stdin (a
// terminal created with TerminalOptions.Stdin) or its pty, and Write
// returns once it went in. data must be valid UTF-8 (the wire carries
// text), at most 1 MiB in acpterm. Without the client's
// MetaTerminalInput it returns ErrNoTerminalInput.
func (t *TerminalHandle) Write(ctx context.Context, data string) error {
	if err := t.inputLive(); err != nil {
		return err
	}
	_, err := call[WriteTerminalResponse](ctx, &t.conn.conn, MethodTerminalWrite,
		&WriteTerminalRequest{SessionID: t.SessionID, TerminalID: t.ID, Data: data})
	return err
}

// CloseStdin sends MethodTerminalCloseStdin: the command reads end of
// file after what was written.
func (t *TerminalHandle) CloseStdin(ctx context.Context) error {
	if err := t.inputLive(); err != nil {
		return err
	}
	_, err := call[CloseTerminalStdinResponse](ctx, &t.conn.conn, MethodTerminalCloseStdin,
		&CloseTerminalStdinRequest{SessionID: t.SessionID, TerminalID: t.ID})
	return err
}

// Resize sends MethodTerminalResize for a pty terminal; a zero cols or
// rows keeps that dimension.
func (t *TerminalHandle) Resize(ctx context.Context, cols, rows uint16) error {
	if err := t.inputLive(); err != nil {
		return err
	}
	_, err := call[ResizeTerminalResponse](ctx, &t.conn.conn, MethodTerminalResize,
		&ResizeTerminalRequest{SessionID: t.SessionID, TerminalID: t.ID, Cols: cols, Rows: rows})
	return err
}
