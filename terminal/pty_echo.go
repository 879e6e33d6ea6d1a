package terminal

import "github.com/acpterm/acpterm/acp"

// PTYEcho reports whether a PTY terminal echoes what is typed into it: false
// while the program has turned echo off, as password prompts do, so that a
// host can say that typing is hidden. For a pipe terminal it fails with
// ErrInvalid; once the command has exited, with ErrInvalid too.
func (m *Manager) PTYEcho(sessionID acp.SessionID, terminalID acp.TerminalID) (bool, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return false, err
	}
	if t.pty == nil {
		return false, invalidf("terminal %q is not on a pty: it was created without Request.PTY", terminalID)
	}
	if t.isDone() {
		return false, invalidf("terminal %q: the command has exited", terminalID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	on, err := ptyEcho(t.pr)
	if err != nil {
		return false, internalErr(err, "reading terminal %q's mode: %v", terminalID, err)
	}
	return on, nil
}
