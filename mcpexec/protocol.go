package mcpexec

import (
	"encoding/json"
	"slices"
)

// The part of MCP's wire this server speaks: the lifecycle, tools and the
// two utility notifications. Names follow the specification's schema
// (2025-11-25); fields this server never reads or sends are left out.

// ProtocolVersions are the MCP revisions the server speaks, newest first.
// initialize answers with the client's version when it is one of these,
// else with the newest, as the specification's negotiation says.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// negotiate picks the version initialize answers with.
func negotiate(asked string) string {
	if slices.Contains(ProtocolVersions, asked) {
		return asked
	}
	return ProtocolVersions[0]
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      *implementation `json:"clientInfo"`
}

type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    serverCapabilities `json:"capabilities"`
	ServerInfo      implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

type serverCapabilities struct {
	Tools *toolsCapability `json:"tools,omitempty"`
}

type toolsCapability struct {
	ListChanged bool `json:"listChanged"`
}

// tool is one entry of tools/list.
type tool struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description"`
	InputSchema json.RawMessage  `json:"inputSchema"`
	Annotations *toolAnnotations `json:"annotations,omitempty"`
}

type toolAnnotations struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

type listToolsResult struct {
	Tools []tool `json:"tools"`
}

// callToolParams is tools/call's params. Meta carries the progress token.
type callToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      *requestMeta    `json:"_meta"`
}

type requestMeta struct {
	// ProgressToken is a string or a number, sent back as it came.
	ProgressToken json.RawMessage `json:"progressToken"`
	// ClaudeToolUse is the tool use ID Claude Code sends with each call
	// (MetaClaudeToolUseID): a hint, read by toolCallHint.
	ClaudeToolUse json.RawMessage `json:"claudecode/toolUseId"`
	// CodexCallID is the call ID Codex sends (MetaCodexCallID).
	CodexCallID json.RawMessage `json:"callId"`
}

type textContent struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// CallToolResult is what tools/call returns: the tool's text, and
// whether it is an error the model should see (a bad argument, a command
// the policy refused) rather than a failure of the protocol.
type callToolResult struct {
	Content           []textContent `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Message       string          `json:"message,omitempty"`
}

type cancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// Methods.
const (
	methodInitialize  = "initialize"
	methodInitialized = "notifications/initialized"
	methodPing        = "ping"
	methodToolsList   = "tools/list"
	methodToolsCall   = "tools/call"
	methodCancelled   = "notifications/cancelled"
	methodProgress    = "notifications/progress"
)
