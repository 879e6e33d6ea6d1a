package terminal

import (
	"bytes"
	"encoding/json"

	"github.com/acpterm/acpterm/acp"
)

// MetaPTY is the _meta key with which an agent that knows acpterm asks
// terminal/create for a pseudo-terminal: {"cols": N, "rows": M}, either
// left out or zero for the default. A client that serves it says so
// with the same key, true, in clientCapabilities._meta. false asks for
// pipes, whatever the host's default (Options.PTY): a caller that reads
// the raw output says so. Any other value is ignored: the command then
// runs as the host's default has it.
const MetaPTY = acp.MetaTerminalPTY

// MetaStdin is the _meta key with which an agent that knows acpterm
// asks terminal/create for a pipe as the command's stdin (Request.Stdin),
// which the host then writes (Input.Write, or acp.MethodTerminalWrite on
// the wire) and closes (Input.CloseStdin): true, or an object (reserved
// for options, none yet). Any other value, false included, is ignored:
// the command's stdin is then /dev/null, as ACP has it. A terminal on a
// pty (MetaPTY) takes input in any case. A client that serves it says so
// with the same key, true, in clientCapabilities._meta.
const MetaStdin = acp.MetaTerminalStdin

// stdinOf reports whether a terminal/create asks for a stdin pipe with
// meta (MetaStdin).
func stdinOf(meta acp.Meta) bool {
	raw, ok := meta[MetaStdin]
	if !ok {
		return false
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return false
	}
	if t[0] == '{' {
		var v map[string]json.RawMessage
		return json.Unmarshal(t, &v) == nil
	}
	var b bool
	return json.Unmarshal(t, &b) == nil && b
}

// ptyOf is the pty a terminal/create asks for with meta (MetaPTY), else
// def (Options.PTY); nil for pipes. The size is checked at create.
func ptyOf(meta acp.Meta, def *Size) *Size {
	if raw, ok := meta[MetaPTY]; ok {
		var v struct {
			Cols *uint16 `json:"cols"`
			Rows *uint16 `json:"rows"`
		}
		t := bytes.TrimSpace(raw)
		if string(t) == "false" {
			return nil
		}
		if len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &v) == nil {
			size := &Size{}
			if v.Cols != nil {
				size.Cols = *v.Cols
			}
			if v.Rows != nil {
				size.Rows = *v.Rows
			}
			return size
		}
	}
	if def == nil {
		return nil
	}
	size := *def
	return &size
}

// RequestedPTY is the pseudo-terminal a terminal/create's _meta asks for
// (MetaPTY), zero fields meaning the default; nil when it asks for none.
// A runtime elsewhere (an exec server's client) reads a request as a
// Manager does with it.
func RequestedPTY(meta acp.Meta) *Size { return ptyOf(meta, nil) }

// RequestedStdin reports whether a terminal/create's _meta asks for a
// stdin pipe (MetaStdin), as a Manager reads it.
func RequestedStdin(meta acp.Meta) bool { return stdinOf(meta) }
