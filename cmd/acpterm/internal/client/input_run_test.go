package client

import (
	"context"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// typeInto is the fake agent's "input" turn, written with the SDK as any
// agent would: it answers `read line` on a stdin pipe and bash's `read
// -s` password prompt on a pty, through acpterm's input methods, and says
// what each command printed.
func (a *fake) typeInto(ctx context.Context, sid acp.SessionID) {
	conn := a.conn.Load()
	a.say(sid, "input served: %v", conn.ServesTerminalInput())
	pipe, err := conn.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: `read line; echo "line: $line"`},
		&acp.TerminalOptions{Stdin: true})
	if err != nil {
		a.say(sid, "pipe: %v", err)
		return
	}
	defer pipe.Close()
	if err := pipe.Write(ctx, "hello\n"); err != nil {
		a.say(sid, "pipe write: %v", err)
		return
	}
	a.say(sid, "pipe: %s", finalOutput(ctx, pipe))

	pty, err := conn.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: "bash",
		Args: []string{"-c", `read -s -p "Password: " pw; echo; echo "got ${#pw} characters"`}}, &acp.TerminalOptions{PTY: &acp.V2TerminalSize{}})
	if err != nil {
		a.say(sid, "pty: %v", err)
		return
	}
	defer pty.Close()
	// An agent learns of output by polling: once the prompt shows, bash
	// has turned echo off.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := pty.Output(ctx)
		if err != nil {
			a.say(sid, "pty output: %v", err)
			return
		}
		if strings.Contains(out.Output, "Password:") {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
	if err := pty.Write(ctx, "hunter2-secret\r"); err != nil {
		a.say(sid, "pty write: %v", err)
		return
	}
	a.say(sid, "pty: %s", finalOutput(ctx, pty))
}

// finalOutput waits for the command and returns its exit and output.
func finalOutput(ctx context.Context, t *acp.TerminalHandle) string {
	st, err := t.WaitForExit(ctx)
	if err != nil {
		return err.Error()
	}
	out, err := t.Output(ctx)
	if err != nil {
		return err.Error()
	}
	return acp.TerminalExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}.String() + " " + strings.ReplaceAll(out.Output, "\n", "|")
}
