package render_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
)

// attachTo is the second created event with which a host ties terminal id
// to tool call call (terminal.Info.ToolCall).
func attachTo(id, call string) step {
	s := created(id, "echo hi", nil, 1<<20)
	s.term.Info.ToolCall = acp.ToolCallID(call)
	return s
}

func playText(t *testing.T, steps []step) string {
	t.Helper()
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now})
	play(r, clock, steps)
	r.Finish(acp.StopReasonEndTurn)
	return out.String()
}

// TestAttachedTerminal: a terminal tied to the running tool call it came
// from is printed under that call's title, once, as an embedded one is,
// with its command line (the title is the agent's).
func TestAttachedTerminal(t *testing.T) {
	got := playText(t, []step{
		toolCall("toolu_1", "mcp__acpterm__exec_command", acp.ToolCallStatusInProgress),
		created("mcp_t1", "echo hi", nil, 1<<20),
		attachTo("mcp_t1", "toolu_1"),
		output("mcp_t1", "hi\n"),
		exited("mcp_t1", code(0)),
		toolUpdate("toolu_1", acp.ToolCallStatusCompleted),
	})
	diffLines(t, got, `✓ mcp__acpterm__exec_command [execute]
  $ echo hi
  │ hi
  └ exit 0 · 0ms
`)
}

// TestAttachedTerminalRefused: a hint naming no running tool call (an
// unknown one, one already printed, one that comes later) leaves the
// terminal on its own; a tool call that ends while its attached
// terminal runs lets go of it, and the rest of the output is still
// shown.
func TestAttachedTerminalRefused(t *testing.T) {
	for name, steps := range map[string][]step{
		"unknown": {
			toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
			created("mcp_t1", "echo hi", nil, 1<<20),
			attachTo("mcp_t1", "toolu_other"),
			output("mcp_t1", "hi\n"),
			exited("mcp_t1", code(0)),
			toolUpdate("toolu_1", acp.ToolCallStatusCompleted),
		},
		"printed": {
			toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
			toolUpdate("toolu_1", acp.ToolCallStatusCompleted),
			created("mcp_t1", "echo hi", nil, 1<<20),
			attachTo("mcp_t1", "toolu_1"),
			output("mcp_t1", "hi\n"),
			exited("mcp_t1", code(0)),
		},
		"later": {
			created("mcp_t1", "echo hi", nil, 1<<20),
			attachTo("mcp_t1", "toolu_1"),
			toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
			output("mcp_t1", "hi\n"),
			exited("mcp_t1", code(0)),
			toolUpdate("toolu_1", acp.ToolCallStatusCompleted),
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := playText(t, steps)
			if !strings.Contains(got, "✓ the tool [execute]\n") || !strings.Contains(got, "$ echo hi\n  │ hi\n  └ exit 0") {
				t.Errorf("want the tool call and the terminal each on its own:\n%s", got)
			}
			if strings.Count(got, "│ hi") != 1 {
				t.Errorf("the output is not shown once:\n%s", got)
			}
		})
	}
	t.Run("ended early", func(t *testing.T) {
		got := playText(t, []step{
			toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
			created("mcp_t1", "echo hi", nil, 1<<20),
			attachTo("mcp_t1", "toolu_1"),
			output("mcp_t1", "first\n"),
			toolUpdate("toolu_1", acp.ToolCallStatusCompleted),
			advance(3e9), tick, // past ExitWait: the tool call is printed
			output("mcp_t1", "second\n"),
			exited("mcp_t1", code(0)),
		})
		if !strings.Contains(got, "✓ the tool [execute]\n  $ echo hi\n  │ first\n  └ still running") || !strings.Contains(got, "$ echo hi\n  │ first\n  │ second\n  └ exit 0") {
			t.Errorf("want the tool call with the output so far, then the terminal on its own with the rest:\n%s", got)
		}
	})
}

// TestAttachedTerminalJSON: terminal_created comes again, naming the
// tool call.
func TestAttachedTerminalJSON(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewJSON(&out, clock.Now)
	play(r, clock, []step{
		toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
		created("mcp_t1", "echo hi", nil, 1<<20),
		attachTo("mcp_t1", "toolu_1"),
	})
	r.Finish(acp.StopReasonEndTurn)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	n := 0
	for _, l := range lines {
		if strings.Contains(l, `"event":"terminal_created"`) {
			n++
			if n == 2 && !strings.Contains(l, `"toolCallId":"toolu_1"`) {
				t.Errorf("second terminal_created names no tool call: %s", l)
			}
			if n == 1 && strings.Contains(l, "toolCallId") {
				t.Errorf("first terminal_created names a tool call: %s", l)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d terminal_created events, want 2:\n%s", n, out.String())
	}
}

// TestAttachedTerminalLive: while it runs, the live region shows the
// tied terminal's output under its tool call's title, and not on its own.
func TestAttachedTerminalLive(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now, Live: true, Size: func() (int, int) { return 80, 24 }})
	play(r, clock, []step{
		toolCall("toolu_1", "the tool", acp.ToolCallStatusInProgress),
		created("mcp_t1", "echo hi", nil, 1<<20),
		attachTo("mcp_t1", "toolu_1"),
		output("mcp_t1", "live-line\n"),
		advance(time.Second), tick,
	})
	live := out.String()
	i, j := strings.LastIndex(live, "the tool"), strings.LastIndex(live, "  $ echo hi\n  │ live-line")
	if i < 0 || j < i || regexp.MustCompile(`[^ ] \$ echo hi`).MatchString(live) {
		t.Errorf("the live region does not show the output under the tool call:\n%q", live)
	}
	r.Finish(acp.StopReasonEndTurn)
}

// TestAttachedTerminalReleased: a terminal tied after it ended and was
// released (opencode reports its tool call only then) is printed under
// the call, once; in JSON, terminal_created comes again naming the call,
// after the exit.
func TestAttachedTerminalReleased(t *testing.T) {
	steps := []step{
		created("mcp_t1", "echo hi", nil, 1<<20),
		output("mcp_t1", "hi\n"),
		exited("mcp_t1", code(0)),
		released("mcp_t1", code(0)),
		toolCall("call_1", "acpterm_exec_command", acp.ToolCallStatusInProgress),
		attachTo("mcp_t1", "call_1"),
		toolUpdate("call_1", acp.ToolCallStatusCompleted),
	}
	diffLines(t, playText(t, steps), `✓ acpterm_exec_command [execute]
  $ echo hi
  │ hi
  └ exit 0 · 0ms
`)
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewJSON(&out, clock.Now)
	play(r, clock, steps)
	r.Finish(acp.StopReasonEndTurn)
	if !regexp.MustCompile(`"terminal_exit"[^\n]*\n(.*\n)*.*"terminal_created"[^\n]*"toolCallId":"call_1"`).MatchString(out.String()) {
		t.Errorf("no terminal_created naming the call after the exit:\n%s", out.String())
	}
}

// TestAttachedTerminalAskedCall: a tool call the agent asks about before
// it reports it (Gemini CLI reports its calls only once they ended) is
// shown from the yes on, under the request's title, and the terminal tied
// to it goes under it; the call's end prints the block once. A refused
// request shows no call.
func TestAttachedTerminalAskedCall(t *testing.T) {
	allow := render.PermissionEvent{SessionID: "sess_1", ToolCallID: "exec_command-1", Title: "exec_command (acpterm MCP Server)", Decision: "allow_once"}
	got := playText(t, []step{
		{perm: &allow},
		created("mcp_t1", "echo hi", nil, 1<<20),
		attachTo("mcp_t1", "exec_command-1"),
		output("mcp_t1", "hi\n"),
		exited("mcp_t1", code(0)),
		toolUpdate("exec_command-1", acp.ToolCallStatusCompleted),
	})
	diffLines(t, got, `✓ exec_command (acpterm MCP Server)
  $ echo hi
  │ hi
  └ exit 0 · 0ms
`)
	deny := allow
	deny.Decision = "reject_once"
	got = playText(t, []step{{perm: &deny}})
	if strings.Contains(got, "✓") || strings.Contains(got, "⠋") || !strings.Contains(got, "✗ permission denied: exec_command (acpterm MCP Server)") {
		t.Errorf("a refused request shows:\n%s", got)
	}
}
