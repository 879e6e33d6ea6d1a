package acp

import (
	"encoding/json"
	"fmt"
)

//go:generate go run ../internal/acpgen -schema ../schema/v2/schema.json -types TerminalUpdate,TerminalOutputChunk -prefix V2 -out types_v2_gen.go

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
//     V2TerminalUpdate.SessionUpdate, read one with V2TerminalUpdateOf.
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

	// SessionUpdateTerminalUpdate and SessionUpdateTerminalOutputChunk are
	// the "sessionUpdate" values of the v2 terminal updates.
	SessionUpdateTerminalUpdate      = "terminal_update"
	SessionUpdateTerminalOutputChunk = "terminal_output_chunk"
)

// MetaTerminalInfoValue is _meta.terminal_info on a tool_call.
type MetaTerminalInfoValue struct {
	TerminalID TerminalID `json:"terminal_id"`
	Cwd        string     `json:"cwd,omitempty"`
}

// MetaTerminalOutputValue is _meta.terminal_output on a tool_call_update:
// the next text of the terminal's output.
type MetaTerminalOutputValue struct {
	TerminalID TerminalID `json:"terminal_id"`
	Data       string     `json:"data"`
}

// MetaTerminalExitValue is _meta.terminal_exit on the last
// tool_call_update of a display terminal. Both members are written, null
// when unknown.
type MetaTerminalExitValue struct {
	TerminalID TerminalID `json:"terminal_id"`
	ExitCode   *int64     `json:"exit_code"`
	Signal     *string    `json:"signal"`
}

// ClientRendersMeta reports whether caps._meta[key] is true.
func ClientRendersMeta(caps ClientCapabilities, key string) bool {
	var b bool
	raw, ok := caps.Meta[key]
	return ok && json.Unmarshal(raw, &b) == nil && b
}

// SessionUpdate wraps u for a v1 session/update.
func (u *V2TerminalUpdate) SessionUpdate() (SessionUpdate, error) {
	return v2SessionUpdate(SessionUpdateTerminalUpdate, u)
}

// SessionUpdate wraps c for a v1 session/update.
func (c *V2TerminalOutputChunk) SessionUpdate() (SessionUpdate, error) {
	return v2SessionUpdate(SessionUpdateTerminalOutputChunk, c)
}

func v2SessionUpdate(kind string, v any) (SessionUpdate, error) {
	raw, err := genTagged("sessionUpdate", kind, v)
	if err != nil {
		return nil, err
	}
	return &UnknownSessionUpdate{Kind: kind, Raw: raw}, nil
}

// V2TerminalUpdateOf returns the terminal_update a v1 session update
// carries: nil and no error when u is something else, an error when it is
// a terminal_update that does not decode. As the generated type has it, a
// member sent as null reads as absent.
func V2TerminalUpdateOf(u SessionUpdate) (*V2TerminalUpdate, error) {
	v := new(V2TerminalUpdate)
	if ok, err := v2Decode(u, SessionUpdateTerminalUpdate, v); !ok {
		return nil, err
	}
	return v, nil
}

// V2TerminalOutputChunkOf is V2TerminalUpdateOf for terminal_output_chunk.
func V2TerminalOutputChunkOf(u SessionUpdate) (*V2TerminalOutputChunk, error) {
	v := new(V2TerminalOutputChunk)
	if ok, err := v2Decode(u, SessionUpdateTerminalOutputChunk, v); !ok {
		return nil, err
	}
	return v, nil
}

// v2Decode decodes u into v when u is an unknown session update of kind;
// ok is false when it is not, or does not decode (err says why).
func v2Decode(u SessionUpdate, kind string, v genObject) (ok bool, err error) {
	x, isUnknown := u.(*UnknownSessionUpdate)
	if !isUnknown || x == nil || x.Kind != kind {
		return false, nil
	}
	if err := genUnmarshal(x.Raw, v); err != nil {
		return false, fmt.Errorf("acp: session update %q: %w", kind, err)
	}
	return true, nil
}
