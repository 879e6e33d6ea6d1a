package shellagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// Exec says where the agent runs its commands.
type Exec string

const (
	// ExecClient runs every command in the client's terminals
	// (terminal/create); a client without terminals gets a message
	// instead. The zero value of Options.Exec means ExecClient.
	ExecClient Exec = "client"
	// ExecLocal runs every command in the agent's own terminal runtime and
	// streams it to the client as a display terminal (acp.RunLocalCommand).
	ExecLocal Exec = "local"
	// ExecAuto uses the client's terminals when the client advertised
	// clientCapabilities.terminal, else runs locally.
	ExecAuto Exec = "auto"
)

// ParseExec reads an --exec value.
func ParseExec(s string) (Exec, error) {
	switch e := Exec(s); e {
	case ExecClient, ExecLocal, ExecAuto:
		return e, nil
	}
	return "", fmt.Errorf("exec must be client, local or auto, not %q", s)
}

// local runs commands in the agent's process: a terminal.Manager with the
// watch RunLocalCommand streams from.
type local struct{ *terminal.Manager }

// LocalTerminals is m as acp.RunLocalCommand runs commands in it.
func LocalTerminals(m *terminal.Manager) acp.LocalTerminals { return local{m} }

// WatchTerminalOutput follows the terminal's events from its start (the
// subscription replays what it retained) to its exit.
func (l local) WatchTerminalOutput(ctx context.Context, sid acp.SessionID, tid acp.TerminalID, fn func([]byte, uint64)) error {
	sub, err := l.Subscribe(string(sid), string(tid))
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		ev, err := sub.Next(ctx)
		switch {
		case errors.Is(err, terminal.ErrSubscriptionClosed):
			return nil
		case err != nil:
			return err
		}
		switch ev.Kind {
		case terminal.EventOutput:
			fn(ev.Data, ev.Dropped)
		case terminal.EventExited, terminal.EventReleased:
			if ev.Dropped > 0 {
				fn(nil, ev.Dropped)
			}
			return nil
		}
	}
}

// execFor is where the agent runs a prompt's commands for a client with
// these capabilities.
func (a *Agent) execFor(caps acp.ClientCapabilities) Exec {
	switch a.opts.Exec {
	case ExecLocal:
		return ExecLocal
	case ExecAuto:
		if caps.Terminal {
			return ExecClient
		}
		return ExecLocal
	}
	return ExecClient
}
