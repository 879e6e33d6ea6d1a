package main

import (
	"strings"
	"unicode"
)

// initialisms maps a word of a schema name to its Go spelling (SessionId -> SessionID).
var initialisms = map[string]string{
	"Fs": "FS", "Http": "HTTP", "Id": "ID", "Json": "JSON", "Mcp": "MCP",
	"Mime": "MIME", "Sse": "SSE", "Uri": "URI", "Url": "URL",
}

// goName turns a schema name (PascalCase, camelCase, snake_case or kebab-case) into an exported Go
// identifier with Go initialisms.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		w = strings.ToUpper(w[:1]) + w[1:]
		if i, ok := initialisms[w]; ok {
			w = i
		}
		b.WriteString(w)
	}
	return b.String()
}

// words splits s at '_', '-', '/', '$' and before each upper-case letter.
func words(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case r == '_' || r == '-' || r == '/' || r == '$':
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = -1
		case unicode.IsUpper(r):
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = i
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// methodConst names the constant for an x-method: "terminal/wait_for_exit" -> MethodTerminalWaitForExit.
func methodConst(method string) string {
	return "Method" + goName(method)
}

// The schema leaves some names to the code generator: the unions it writes inline into an object,
// and variants it spells out inline instead of referencing a $def. These tables name them.

// flatUnion names a union whose branches are merged into the object that holds them.
type flatUnion struct {
	Field string // Go field of the containing struct
	Iface string // Go interface of the union
}

var flatUnions = map[string]flatUnion{
	"CreateElicitationRequest":      {"Mode", "ElicitationMode"},
	"CreateElicitationResponse":     {"Action", "ElicitationAction"},
	"DiffChange":                    {"Change", "DiffOperation"}, // v2
	"StateUpdate":                   {"State", "State"},          // v2, made an object by patchV2
	"ElicitationFormMode":           {"Scope", "ElicitationScope"},
	"ElicitationUrlMode":            {"Scope", "ElicitationScope"},
	"SessionConfigOption":           {"Kind", "SessionConfigKind"},
	"SetSessionConfigOptionRequest": {"Value", "SessionConfigValue"},
}

// inlineVariants names variants written inline in a union, keyed by "<def>/<tag>" ("" = the untagged branch).
var inlineVariants = map[string]string{
	"CreateElicitationResponse/cancel":      "ElicitationCancelAction",
	"CreateElicitationResponse/decline":     "ElicitationDeclineAction",
	"RequestPermissionOutcome/cancelled":    "CancelledPermissionOutcome",
	"SetSessionConfigOptionRequest/":        "SessionConfigSelectValue",
	"SetSessionConfigOptionRequest/boolean": "SessionConfigBooleanValue",
	"SetSessionConfigOptionRequest/id":      "SessionConfigIDValue", // v2
}

// tagAliases lists discriminator values that select a union's untagged (default) variant as well:
// peers write "type":"stdio" for MCP servers, and legacy agents "agent" or "env_var" for auth methods.
var tagAliases = map[string][]string{
	"AuthMethod": {"agent", "env_var"},
	"McpServer":  {"stdio"},
}

// skipReasons lists the $defs that get no generated Go type, and why.
var skipReasons = map[string]string{
	"AgentNotification":  "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"AgentRequest":       "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"AgentResponse":      "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"ClientNotification": "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"ClientRequest":      "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"ClientResponse":     "message-union wrapper; internal/jsonrpc2 frames messages and the method table maps names to types",
	"Error":              "hand-written as acp.Error (errors.go) because it implements error",
	"ErrorCode":          "hand-written: acp.ErrorCode(err) and the Err* sentinels carry the codes",
	"ErrorData":          "v2: what Error.Data may hold; Error keeps it as JSON, and its two shapes have types of their own",
}
