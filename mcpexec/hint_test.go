//go:build unix

package mcpexec_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
)

// TestToolCallHint: an exec_command whose _meta names Claude Code's tool
// use ID reports it with the command's terminal; one without, or with an
// ID that is not a short printable string, reports nothing, and runs all
// the same.
func TestToolCallHint(t *testing.T) {
	var mu sync.Mutex
	var hints []mcpexec.ToolCallHint
	c := startServer(t, &mcpexec.Options{SessionID: "s1", ToolCall: func(h mcpexec.ToolCallHint) {
		mu.Lock()
		hints = append(hints, h)
		mu.Unlock()
	}})
	call := func(meta any) {
		t.Helper()
		params := map[string]any{"name": "exec_command", "arguments": map[string]any{"cmd": "echo ran"}}
		if meta != nil {
			params["_meta"] = meta
		}
		var res toolResult
		if err := c.call(ctxFor(t), "tools/call", params, &res); err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.Contains(output(res), "ran") {
			t.Fatalf("meta %v: the command did not run: %q", meta, res.text())
		}
	}
	call(map[string]any{mcpexec.MetaClaudeToolUseID: "toolu_01ABC"})
	for _, bad := range []any{
		nil,
		map[string]any{},
		map[string]any{mcpexec.MetaClaudeToolUseID: ""},
		map[string]any{mcpexec.MetaClaudeToolUseID: 42},
		map[string]any{mcpexec.MetaClaudeToolUseID: map[string]any{"id": "x"}},
		map[string]any{mcpexec.MetaClaudeToolUseID: "has space"},
		map[string]any{mcpexec.MetaClaudeToolUseID: "esc\x1b[2J"},
		map[string]any{mcpexec.MetaClaudeToolUseID: "é"},
		map[string]any{mcpexec.MetaClaudeToolUseID: strings.Repeat("a", mcpexec.MaxToolCallHint+1)},
	} {
		call(bad)
	}
	call(map[string]any{mcpexec.MetaClaudeToolUseID: strings.Repeat("b", mcpexec.MaxToolCallHint), "progressToken": 1})
	call(map[string]any{mcpexec.MetaCodexCallID: "call_resp_1", "x-codex-turn-metadata": map[string]any{"turn_id": "t"}})
	// Claude's key first: a call naming both is tied by it.
	call(map[string]any{mcpexec.MetaCodexCallID: "call_2", mcpexec.MetaClaudeToolUseID: "toolu_2"})
	call(map[string]any{mcpexec.MetaCodexCallID: 3})
	mu.Lock()
	defer mu.Unlock()
	// Every call reports its arguments; only the good IDs are named.
	if len(hints) != 14 {
		t.Fatalf("%d hints, want one a call (14)", len(hints))
	}
	var named []mcpexec.ToolCallHint
	for _, h := range hints {
		if string(h.Arguments) != `{"cmd":"echo ran"}` || h.TerminalID == "" {
			t.Errorf("hint = %+v, want the call's arguments and terminal", h)
		}
		if h.ToolCallID != "" {
			named = append(named, h)
		}
	}
	hints = named
	if len(hints) != 4 || hints[2].ToolCallID != "call_resp_1" || hints[3].ToolCallID != "toolu_2" {
		t.Fatalf("hints = %+v, want the two good IDs only", hints)
	}
	if h := hints[0]; h.ToolCallID != "toolu_01ABC" || h.SessionID != "s1" || h.TerminalID == "" {
		t.Errorf("hint = %+v, want toolu_01ABC in session s1 with the terminal", h)
	}
	if hints[1].ToolCallID != acp.ToolCallID(strings.Repeat("b", mcpexec.MaxToolCallHint)) || hints[1].TerminalID == hints[0].TerminalID {
		t.Errorf("second hint = %+v", hints[1])
	}
}
