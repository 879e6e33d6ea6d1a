package terminal

import (
	"context"

	"github.com/acpterm/acpterm/acp"
)

// InputHandler serves acpterm's input methods (acp.TerminalInputHandler:
// _acpterm/terminal/write, close_stdin and resize) on in, a *Manager or
// any other runtime that implements Input. A Client that adds it beside
// its terminal methods advertises acp.MetaTerminalInput; a host whose
// runtime is not an Input leaves it out, and the agent's calls get
// -32601.
//
//	if in, ok := rt.(terminal.Input); ok {
//		client = struct{ *myClient; acp.TerminalInputHandler }{c, terminal.InputHandler(in)}
//	}
//
// Errors are those of Input, sent as the terminal methods send theirs:
// an unknown terminal, one without input, one whose command exited or
// whose stdin is closed, and a write over MaxStdinWrite are -32602 with
// a message that says which.
func InputHandler(in Input) acp.TerminalInputHandler { return inputHandler{in} }

type inputHandler struct{ in Input }

func (h inputHandler) WriteTerminal(ctx context.Context, req *acp.WriteTerminalRequest) (*acp.WriteTerminalResponse, error) {
	if len(req.Data) > MaxStdinWrite {
		// Checked here too, before the text is copied: the runtime may be
		// remote, and its answer would come after sending it all there.
		return nil, wireErr(invalidf("%d bytes for terminal %q's stdin: at most %d bytes per write", len(req.Data), req.TerminalID, MaxStdinWrite))
	}
	if _, err := h.in.Write(ctx, req.SessionID, req.TerminalID, []byte(req.Data)); err != nil {
		return nil, wireErr(err)
	}
	return &acp.WriteTerminalResponse{}, nil
}

func (h inputHandler) CloseTerminalStdin(_ context.Context, req *acp.CloseTerminalStdinRequest) (*acp.CloseTerminalStdinResponse, error) {
	if err := h.in.CloseStdin(req.SessionID, req.TerminalID); err != nil {
		return nil, wireErr(err)
	}
	return &acp.CloseTerminalStdinResponse{}, nil
}

func (h inputHandler) ResizeTerminal(_ context.Context, req *acp.ResizeTerminalRequest) (*acp.ResizeTerminalResponse, error) {
	if err := h.in.Resize(req.SessionID, req.TerminalID, Size{Cols: req.Cols, Rows: req.Rows}); err != nil {
		return nil, wireErr(err)
	}
	return &acp.ResizeTerminalResponse{}, nil
}
