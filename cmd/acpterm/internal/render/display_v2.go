package render

import (
	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
)

// The ACP v2 draft's form, which acpterm decodes inside v1 sessions as Zed
// does, and asks for with clientCapabilities._meta.terminal_update = true
// (display.MetaTerminalUpdate):
//
//   - the session update terminal_update {terminalId, command?, cwd?,
//     output?, exitStatus?}: an upsert; an exitStatus ends the terminal;
//   - the session update terminal_output_chunk {terminalId, data}: the
//     next bytes of the output, base64.

// fromV2 handles the v2 terminal session updates; other unknown updates
// are left to the renderer. Malformed ones are ignored: display only.
func (d *DisplayTerminals) fromV2(sessionID acp.SessionID, u acp.SessionUpdate) {
	// The draft's terminal IDs name the same display terminals as Zed's
	// _meta ones: one namespace, acp.TerminalID.
	if c, err := display.TerminalOutputChunkOf(u); c != nil && err == nil && c.TerminalID != "" {
		id := acp.TerminalID(c.TerminalID)
		d.create(sessionID, "", id, "", nil, "")
		d.output(sessionID, id, c.Data)
		return
	}
	tu, err := display.TerminalUpdateOf(u)
	if tu == nil || err != nil || tu.TerminalID == "" {
		return
	}
	id := acp.TerminalID(tu.TerminalID)
	var cmd, cwd string
	if tu.Command != nil {
		cmd = *tu.Command
	}
	if tu.Cwd != nil {
		cwd = string(*tu.Cwd)
	}
	d.create(sessionID, "", id, cmd, nil, cwd)
	// A later terminal_update may bring the command or cwd (an upsert).
	d.update(sessionID, id, cmd, nil, cwd, fromTerminal)
	if tu.Output != nil {
		// An authoritative snapshot of the whole output. The renderers
		// append, so what goes on is the part past what they were given:
		// all of it for a snapshot that extends the output, nothing for
		// one that rewrites or shortens it.
		d.mu.Lock()
		var fresh []byte
		if t := d.known[id]; t != nil {
			if n := uint64(len(tu.Output.Data)); n > t.shown {
				fresh = tu.Output.Data[t.shown:]
			}
			t.shown = uint64(len(tu.Output.Data) - len(fresh)) // output adds fresh
		}
		d.mu.Unlock()
		d.output(sessionID, id, fresh)
	}
	if es := tu.ExitStatus; es != nil {
		d.exit(sessionID, id, es.ExitCode, es.Signal)
	}
}
