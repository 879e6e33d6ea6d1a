package shellagent

import (
	"fmt"

	"github.com/acpterm/acpterm/acp"
)

// Exec says where the agent runs its commands.
type Exec string

const (
	// ExecClient runs every command in the client's terminals
	// (terminal/create); a client without terminals gets a message
	// instead. The zero value of Options.Exec means ExecClient.
	ExecClient Exec = "client"
	// ExecLocal runs every command in the agent's own terminal runtime and
	// streams it to the client as a display terminal (display.RunLocalCommand).
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
