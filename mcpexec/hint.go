package mcpexec

import (
	"encoding/json"

	"github.com/acpterm/acpterm/acp"
)

// MetaClaudeToolUseID is the key of tools/call's _meta under which Claude
// Code (and so claude-agent-acp) names the tool use that made the call:
// the ID its ACP tool_call for that call carries as toolCallId.
const MetaClaudeToolUseID = "claudecode/toolUseId"

// MetaCodexCallID is the key of tools/call's _meta under which Codex (and
// so codex-acp) names the call: the ID of its ACP tool_call for it. Read
// when MetaClaudeToolUseID is not there.
const MetaCodexCallID = "callId"

// MaxToolCallHint bounds the tool call ID a call's _meta may name: IDs
// are short tokens (Claude's are 30-odd bytes).
const MaxToolCallHint = 128

// ToolCallHint is what an exec_command call said of the tool call it came
// from: the agent's own ID for it, as its _meta named it. It is the
// agent's word, good for display only: a host may show the command under
// that tool call, if the agent reported one with that ID in the host's
// session, and must not trust it for anything else.
type ToolCallHint struct {
	// SessionID and TerminalID name the command's terminal on the
	// server's runtime.
	SessionID  acp.SessionID
	TerminalID acp.TerminalID
	// ToolCallID is the agent's tool call ID: 1 to MaxToolCallHint
	// printable ASCII characters, no spaces; "" when the call's _meta
	// named none.
	ToolCallID acp.ToolCallID
	// Arguments are the tools/call's arguments as the agent sent them,
	// unchecked: an agent that names no ID may still report the same
	// arguments as its tool call's rawInput.
	Arguments json.RawMessage
}

// toolCallHint reads the tool call ID of a call's _meta: "" when there is
// none, or when it is not a short printable string (then it is ignored).
func toolCallHint(m *requestMeta) acp.ToolCallID {
	if m == nil {
		return ""
	}
	raw := m.ClaudeToolUse
	if len(raw) == 0 {
		raw = m.CodexCallID
	}
	if len(raw) == 0 || len(raw) > 2*MaxToolCallHint+2 {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) != nil || !validHint(id) {
		return ""
	}
	return acp.ToolCallID(id)
}

// validHint reports whether id is 1 to MaxToolCallHint bytes of printable
// ASCII without spaces: nothing a screen could be fooled by.
func validHint(id string) bool {
	if id == "" || len(id) > MaxToolCallHint {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
