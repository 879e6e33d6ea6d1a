package terminal

import (
	"context"

	"github.com/acpterm/acpterm/acp"
)

// Input is typing into a runtime's terminals: the bytes a person or an
// agent sends to a command's stdin or pty, and the pty's size. A
// *Manager serves it; a runtime that does not (an older remote exec
// server) fails each call with an error wrapping ErrInvalid.
//
// A terminal takes input when it was created with a pty (Request.PTY,
// MetaPTY) or with a pipe for stdin (Request.Stdin); writing to any
// other fails with ErrInvalid.
type Input interface {
	// Write sends data to the command, as Manager.Write.
	Write(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, data []byte) (int, error)
	// CloseStdin ends the command's input, as Manager.CloseStdin.
	CloseStdin(sessionID acp.SessionID, terminalID acp.TerminalID) error
	// Resize changes a pty terminal's size, as Manager.Resize.
	Resize(sessionID acp.SessionID, terminalID acp.TerminalID, size Size) error
}

var _ Input = (*Manager)(nil)
