package terminal

import (
	"errors"
	"testing"
)

// TestPTYEcho: a pty echoes until a password prompt turns echo off, and
// again once it is answered; a pipe terminal has no echo to tell.
func TestPTYEcho(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "bash", Args: []string{"-c", `echo ready; read -r _; read -s -p 'Password: ' pw; echo; echo done; read -r _`}, PTY: defaultPTY})
	waitFor(t, m, info, "ready")
	echo := func(want bool) {
		t.Helper()
		on, err := m.PTYEcho(info.SessionID, info.TerminalID)
		if err != nil || on != want {
			t.Fatalf("PTYEcho = %v, %v; want %v", on, err, want)
		}
	}
	echo(true)
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("go\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, info, "Password: ") // bash turns echo off before it prints the prompt
	echo(false)
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("secret\r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, info, "done")
	echo(true)
	mustRelease(t, m, info)

	pipe := mustCreate(t, m, Request{Command: "true"})
	if _, err := m.PTYEcho(pipe.SessionID, pipe.TerminalID); !errors.Is(err, ErrInvalid) {
		t.Errorf("PTYEcho of a pipe terminal: %v, want ErrInvalid", err)
	}
}
