//go:build linux

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	registerHostile("mcptied", func() int { return serveAgent(&mcpTiedAgent{}) })
}

// tiedCall is the ID of the tool call mcpTiedAgent reports.
const tiedCall = "toolu_01TiedCall"

// mcpTiedAgent plays claude-agent-acp running a command through the
// offered MCP server: it reports the tool call tiedCall, then calls
// exec_command with Claude Code's _meta naming a tool use, then ends the
// tool call. The prompt is "ID CMD": the ID the _meta names, and the
// command.
type mcpTiedAgent struct{ mcpClientAgent }

func (a *mcpTiedAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	var line string
	for _, b := range req.Prompt {
		if t, ok := b.(*acp.TextContent); ok {
			line += t.Text
		}
	}
	id, cmdLine, _ := strings.Cut(line, " ")
	send := func(u acp.SessionUpdate) error {
		return a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u})
	}
	if id == "qwen" {
		// Qwen Code: no ID in _meta; the arguments as rawInput of the
		// permission request, before the call.
		if err := a.qwenAsks(ctx, req.SessionID, cmdLine); err != nil {
			return nil, err
		}
	} else {
		if err := send(&acp.ToolCall{ToolCallID: tiedCall, Title: "exec through acpterm", Kind: acp.ToolKindExecute,
			Status: acp.ToolCallStatusInProgress}); err != nil {
			return nil, err
		}
		a.meta = mcp.Meta{mcpexec.MetaClaudeToolUseID: id}
	}
	text := a.run(ctx, cmdLine)
	done := acp.ToolCallStatusCompleted
	if err := send(&acp.ToolCallUpdate{ToolCallID: tiedCall, Status: &done}); err != nil {
		return nil, err
	}
	if err := send(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "done\n"}}); err != nil {
		return nil, err
	}
	_ = text
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// qwenAsks reports the tool call as Qwen Code 0.24.4 does, then asks
// leave to run it with the arguments as rawInput.
func (a *mcpTiedAgent) qwenAsks(ctx context.Context, sid acp.SessionID, cmdLine string) error {
	conn := a.conn.Load()
	meta := acp.Meta{"toolName": json.RawMessage(`"mcp__acpterm__exec_command"`)}
	if err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid, Update: &acp.ToolCall{ToolCallID: tiedCall,
		Title: "exec_command (acpterm MCP Server)", Kind: acp.ToolKindOther, Status: acp.ToolCallStatusPending,
		RawInput: json.RawMessage(`{}`), Meta: meta}}); err != nil {
		return err
	}
	args, err := json.Marshal(map[string]string{"cmd": cmdLine})
	if err != nil {
		return err
	}
	title := string(args)
	_, err = conn.RequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: sid,
		ToolCall: acp.ToolCallUpdate{ToolCallID: tiedCall, Title: &title, RawInput: args, Meta: meta},
		Options:  []acp.PermissionOption{{OptionID: "proceed_once", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}}})
	return err
}

// TestRunTiesMCPToToolCall: an exec_command whose _meta names the
// agent's running tool call (Claude Code's claudecode/toolUseId) is shown
// under that tool call's title, once, as an embedded terminal is, and
// --format json names the call in terminal_created; one naming another ID
// is shown as a terminal of its own.
func TestRunTiesMCPToToolCall(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, id, format string) result {
		ws := t.TempDir()
		r := acpterm(t, opts{env: []string{fakeAgentEnv + "=mcptied"}, bound: 60 * time.Second},
			"run", "--mcp", "--format", format, "--approve-all", "--cwd", ws, "-p", id+" echo tied-output", "--", testExe(t))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		return r
	}
	t.Run("match", func(t *testing.T) {
		t.Parallel()
		r := run(t, tiedCall, "text")
		if !strings.Contains(r.stdout, "✓ exec through acpterm [execute]\n  $ echo tied-output\n  │ tied-output\n  └ exit 0") {
			t.Errorf("the output is not under the tool call:\n%s", r.stdout)
		}
		if strings.Count(r.stdout, "│ tied-output") != 1 || strings.Contains(r.stdout, "\n$ echo tied-output") {
			t.Errorf("the output is not shown once, under the tool call:\n%s", r.stdout)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		t.Parallel()
		r := run(t, "toolu_01SomeOtherCall", "text")
		if !strings.Contains(r.stdout, "✓ exec through acpterm [execute]\n") || !strings.Contains(r.stdout, "$ echo tied-output\n  │ tied-output\n  └ exit 0") {
			t.Errorf("want the tool call and the terminal each on its own:\n%s", r.stdout)
		}
	})
	t.Run("arguments", func(t *testing.T) {
		t.Parallel()
		r := run(t, "qwen", "text")
		if !strings.Contains(r.stdout, "✓ exec_command (acpterm MCP Server)\n  $ echo tied-output\n  │ tied-output\n  └ exit 0") ||
			strings.Count(r.stdout, "│ tied-output") != 1 {
			t.Errorf("the output is not under the tool call its arguments name, once:\n%s", r.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		r := run(t, tiedCall, "json")
		created := ofKind(parseEvents(t, r.stdout), "terminal_created")
		if len(created) != 2 || created[0].str("toolCallId") != "" || created[1].str("toolCallId") != tiedCall ||
			created[1].str("terminalId") != created[0].str("terminalId") {
			t.Errorf("terminal_created events %v, want the command's, then again naming %s", created, tiedCall)
		}
	})
}

// TestRunTiesMCPToToolCallRemoteSSH: the same with --remote ssh://…
// (a real sshd on loopback): the command runs on the target, and shows
// under the tool call, with where it ran.
func TestRunTiesMCPToToolCallRemoteSSH(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	args := append([]string{"run", "--mcp", "--approve-all"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", tiedCall+" echo tied-output", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=mcptied"}, bound: 60 * time.Second}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("stdout:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "✓ exec through acpterm [execute]\n  $ echo tied-output\n  │ tied-output\n  └ exit 0") ||
		!strings.Contains(r.stdout, "on ssh://") || strings.Count(r.stdout, "│ tied-output") != 1 {
		t.Errorf("the output is not under the tool call, once, on the target:\n%s", r.stdout)
	}
}
