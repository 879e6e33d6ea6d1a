package display

import (
	"encoding/json"
	"fmt"

	"github.com/acpterm/acpterm/acp"
)

// Display terminals: a command the agent runs itself, streamed to the
// client for display. There are two wire forms, and a client says which it
// renders in clientCapabilities._meta:
//
//   - Zed's _meta form (MetaTerminalOutput: true): the tool_call carries
//     _meta.terminal_info, tool_call_updates carry _meta.terminal_output
//     with the next UTF-8 text, the last one _meta.terminal_exit. The keys
//     inside are snake_case; the ids are the agent's.
//   - The ACP v2 draft's form (MetaTerminalUpdate: true): the session
//     updates "terminal_update" (an upsert of the terminal's command, cwd,
//     exit status) and "terminal_output_chunk" (bytes, base64), sent inside
//     a v1 session as Zed decodes them. v1's SessionUpdate has no such
//     variants, so they travel as an UnknownSessionUpdate: build one with
//     the SessionUpdate method of a TerminalUpdate or TerminalOutputChunk,
//     read one with TerminalUpdateOf or TerminalOutputChunkOf.
//
// The v2 key is this package's convention for v1 sessions; v2 itself needs
// none. In both forms a tool call embeds the terminal as
// {"type":"terminal","terminalId":…}, a display anchor only: the client
// has no terminal/* methods for it.
const (
	// MetaTerminalOutput is the clientCapabilities._meta key of Zed's
	// display terminals, and the tool_call_update _meta key of their output.
	MetaTerminalOutput = "terminal_output"
	// MetaTerminalInfo is the tool_call _meta key that introduces a
	// display terminal (Zed's form).
	MetaTerminalInfo = "terminal_info"
	// MetaTerminalExit is the tool_call_update _meta key of a display
	// terminal's exit (Zed's form).
	MetaTerminalExit = "terminal_exit"
	// MetaTerminalUpdate is the clientCapabilities._meta key with which a
	// client says that it renders the v2 "terminal_update" and
	// "terminal_output_chunk" session updates in a v1 session.
	MetaTerminalUpdate = "terminal_update"
)

// The v2 draft's terminal types, named here without the prefix V2 they
// carry in package acp. They are declared there, generated from the v2
// schema with acp's strict decoding, and they are the same types.
type (
	// TerminalUpdate is the v2 "terminal_update" session update: an upsert
	// of an agent-owned terminal's command, cwd and exit status.
	TerminalUpdate = acp.V2TerminalUpdate
	// TerminalOutputChunk is the v2 "terminal_output_chunk" session update:
	// bytes appended to the terminal's output.
	TerminalOutputChunk = acp.V2TerminalOutputChunk
	// TerminalID names a display terminal in the v2 updates.
	TerminalID = acp.TerminalID
	// AbsolutePath is the v2 form of an absolute path (a terminal's cwd).
	AbsolutePath = acp.V2AbsolutePath
	// TerminalExitStatus is how a display terminal ended, in the v2 form:
	// not acp.TerminalExitStatus, the v1 terminal/* one, whose exit code
	// is unsigned 32-bit where the draft's is signed 64-bit (see
	// acp.V2TerminalExitStatus).
	TerminalExitStatus = acp.V2TerminalExitStatus
	// TerminalOutput is the v2 form of a terminal's output so far.
	TerminalOutput = acp.V2TerminalOutput
	// TerminalSize is a terminal's size in character cells.
	TerminalSize = acp.V2TerminalSize
	// TerminalCapabilities are the controls a terminal supports.
	TerminalCapabilities = acp.V2TerminalCapabilities
	// TerminalCancelCapabilities advertises terminal/cancel.
	TerminalCancelCapabilities = acp.V2TerminalCancelCapabilities
)

// MetaTerminalInfoValue is _meta.terminal_info on a tool_call.
type MetaTerminalInfoValue struct {
	TerminalID acp.TerminalID `json:"terminal_id"`
	Cwd        string         `json:"cwd,omitempty"`
}

// MetaTerminalOutputValue is _meta.terminal_output on a tool_call_update:
// the next text of the terminal's output.
type MetaTerminalOutputValue struct {
	TerminalID acp.TerminalID `json:"terminal_id"`
	Data       string         `json:"data"`
}

// MetaTerminalExitValue is _meta.terminal_exit on the last
// tool_call_update of a display terminal. Both members are written, null
// when unknown.
type MetaTerminalExitValue struct {
	TerminalID acp.TerminalID `json:"terminal_id"`
	ExitCode   *int64         `json:"exit_code"`
	Signal     *string        `json:"signal"`
}

// ClientRendersMeta reports whether caps._meta[key] is true.
func ClientRendersMeta(caps acp.ClientCapabilities, key string) bool {
	var b bool
	raw, ok := caps.Meta[key]
	return ok && json.Unmarshal(raw, &b) == nil && b
}

// TerminalUpdateOf returns the terminal_update a v1 session update
// carries: nil and no error when u is something else, an error when it is
// a terminal_update that does not decode. As the generated type has it, a
// member sent as null reads as absent.
func TerminalUpdateOf(u acp.SessionUpdate) (*TerminalUpdate, error) {
	v := new(TerminalUpdate)
	if ok, err := v2Decode(u, acp.SessionUpdateTerminalUpdate, v); !ok {
		return nil, err
	}
	return v, nil
}

// TerminalOutputChunkOf is TerminalUpdateOf for terminal_output_chunk.
func TerminalOutputChunkOf(u acp.SessionUpdate) (*TerminalOutputChunk, error) {
	v := new(TerminalOutputChunk)
	if ok, err := v2Decode(u, acp.SessionUpdateTerminalOutputChunk, v); !ok {
		return nil, err
	}
	return v, nil
}

// v2Decode decodes u into v when u is an unknown session update of kind;
// ok is false when it is not, or does not decode (err says why).
func v2Decode(u acp.SessionUpdate, kind string, v json.Unmarshaler) (ok bool, err error) {
	x, isUnknown := u.(*acp.UnknownSessionUpdate)
	if !isUnknown || x == nil || x.Kind != kind {
		return false, nil
	}
	if err := v.UnmarshalJSON(x.Raw); err != nil {
		return false, fmt.Errorf("display: session update %q: %w", kind, err)
	}
	return true, nil
}
