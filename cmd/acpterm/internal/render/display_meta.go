package render

import (
	"encoding/json"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
)

// Display-only terminals: Zed's _meta extension, used by agents that run
// commands themselves (codex-acp, claude-agent-acp and others) to stream
// them into the client's UI. A client advertises it with
// clientCapabilities._meta.terminal_output = true; the agent then sends
//
//   - on the tool_call: _meta.terminal_info = {terminal_id, cwd?}, and a
//     {"type":"terminal","terminalId":…} content item;
//   - on tool_call_updates: _meta.terminal_output = {terminal_id, data},
//     data being the next UTF-8 text of the output;
//   - on the last update: _meta.terminal_exit = {terminal_id, exit_code,
//     signal}.
//
// JetBrains' form (codex-acp's TypeScript adapter): the client declares
// clientCapabilities._meta.terminal_output_delta = true, and the agent
// sends _meta.terminal_output_delta = {terminal_id, data} in place of
// terminal_output, each data appended to the output.
//
// The v2 draft's form is read in display_v2.go, and the gaps real agents
// leave are filled in display_gaps.go.

// metaTerminalOutputKey is the capability key and the update key.
const metaTerminalOutputKey = display.MetaTerminalOutput

// metaTerminalOutputDeltaKey is JetBrains' capability key and update key,
// as codex-acp's TypeScript adapter reads and writes them.
const metaTerminalOutputDeltaKey = "terminal_output_delta"

// fromMeta creates the terminals a tool call's _meta names and passes on
// their output; the exit is left to the caller, after fromCall.
func (d *DisplayTerminals) fromMeta(sessionID acp.SessionID, c *callUpdate) {
	if len(c.meta) == 0 {
		return
	}
	// A terminal is named by the command of its tool call's rawInput,
	// else by the tool call's title (create).
	command, args, cwd, _ := commandOf(c.rawInput)
	var info display.MetaTerminalInfoValue
	if decodeMeta(c.meta, display.MetaTerminalInfo, &info) && info.TerminalID != "" {
		if info.Cwd != "" {
			cwd = info.Cwd
		}
		d.create(sessionID, c.id, info.TerminalID, command, args, cwd)
	}
	for _, key := range []string{metaTerminalOutputKey, metaTerminalOutputDeltaKey} {
		var out display.MetaTerminalOutputValue
		if decodeMeta(c.meta, key, &out) && out.TerminalID != "" {
			d.create(sessionID, c.id, out.TerminalID, command, args, cwd)
			d.output(sessionID, out.TerminalID, []byte(out.Data))
		}
	}
	if exit, ok := metaExit(c.meta); ok {
		d.create(sessionID, c.id, exit.TerminalID, command, args, cwd)
	}
}

// metaExit is the terminal_exit of a tool call's _meta, if it has one.
func metaExit(meta acp.Meta) (display.MetaTerminalExitValue, bool) {
	var exit display.MetaTerminalExitValue
	ok := decodeMeta(meta, display.MetaTerminalExit, &exit) && exit.TerminalID != ""
	return exit, ok
}

// decodeMeta decodes meta[key] into v, reporting whether it was there and
// well formed. A malformed value is ignored: it is display only.
func decodeMeta(meta acp.Meta, key string, v any) bool {
	raw, ok := meta[key]
	return ok && json.Unmarshal(raw, v) == nil
}
