package acp

// The ACP v2 draft's terminal updates, for display terminals in a v1
// session: the wire types (types_v2_gen.go, named with the prefix V2) and
// how they travel. v1's SessionUpdate has no such variants, so they go as
// an UnknownSessionUpdate. The package display sends and reads them
// (display.TerminalUpdateOf); they stay here because their decoding is
// the generated code's.
//
// V2TerminalExitStatus stays a type of its own rather than an alias of
// TerminalExitStatus, which every other exit status in acpterm is: the
// draft's exitCode is a signed 64-bit integer (a Windows exit code may be
// negative, say -1073741819), v1's an unsigned 32-bit one, and each type
// must decode its own schema's values strictly. An agent's display
// terminal reports in the v2 form; a client that shows it with the v1
// type decides how a negative code reads.
const (
	// SessionUpdateTerminalUpdate and SessionUpdateTerminalOutputChunk are
	// the "sessionUpdate" values of the v2 terminal updates.
	SessionUpdateTerminalUpdate      = "terminal_update"
	SessionUpdateTerminalOutputChunk = "terminal_output_chunk"
)

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
