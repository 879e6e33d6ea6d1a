package mcptie

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/terminal"
)

// argsTies is a Ties whose session is "sess" from the start, with
// helpers that speak for the agent and the MCP server.
type argsTies struct {
	t     *testing.T
	ties  *Ties
	rec   *tieRecorder
	shown *shownGate
	terms int
}

func newArgsTies(t *testing.T) *argsTies {
	a := &argsTies{t: t, rec: &tieRecorder{}, shown: newShownGate()}
	a.ties = New(func() acp.SessionID { return "sess" }, a.rec, a.shown.wait)
	return a
}

// run creates a terminal of the MCP server and hints its arguments.
func (a *argsTies) run(args string) acp.TerminalID {
	a.terms++
	id := acp.TerminalID("t" + strings.Repeat("x", a.terms))
	ev := terminal.Event{Kind: terminal.EventCreated, SessionID: "mcp-1", TerminalID: id,
		Info: &terminal.Info{SessionID: "mcp-1", TerminalID: id, Command: "echo"}}
	a.ties.TerminalEvent(ev)
	a.shown.mark(ev.SessionID, id)
	a.ties.Hint(context.Background(), mcpexec.ToolCallHint{SessionID: "mcp-1", TerminalID: id, Arguments: json.RawMessage(args)})
	return id
}

func (a *argsTies) call(session acp.SessionID, id acp.ToolCallID, title, input string) {
	a.ties.Update(&acp.SessionNotification{SessionID: session, Update: &acp.ToolCall{ToolCallID: id, Title: title,
		Status: acp.ToolCallStatusPending, RawInput: rawOrNil(input)}})
}

func (a *argsTies) progress(id acp.ToolCallID, st acp.ToolCallStatus, input string) {
	a.ties.Update(&acp.SessionNotification{SessionID: "sess", Update: &acp.ToolCallUpdate{ToolCallID: id, Status: &st, RawInput: rawOrNil(input)}})
}

// permission is an allowed permission request with the arguments as
// rawInput and the tool named in _meta, as Qwen Code asks.
func (a *argsTies) permission(session acp.SessionID, id acp.ToolCallID, input, toolName string) {
	title := input
	a.ties.Permission(&acp.RequestPermissionRequest{SessionID: session, ToolCall: acp.ToolCallUpdate{ToolCallID: id, Title: &title,
		RawInput: rawOrNil(input), Meta: acp.Meta{"toolName": json.RawMessage(`"` + toolName + `"`)}}}, true)
}

// geminiPermission is a permission request as Gemini CLI asks about an
// MCP call it has not reported: the tool in the title, the arguments'
// JSON as the one text of its content.
func (a *argsTies) geminiPermission(id acp.ToolCallID, title, text string, allowed bool) {
	a.ties.Permission(&acp.RequestPermissionRequest{SessionID: "sess", ToolCall: acp.ToolCallUpdate{ToolCallID: id, Title: &title,
		Content: []acp.ToolCallContent{&acp.Content{Content: &acp.TextContent{Text: text}}}}}, allowed)
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func (a *argsTies) want(want map[acp.TerminalID]acp.ToolCallID) {
	a.t.Helper()
	got := a.rec.ties()
	if len(got) != len(want) {
		a.t.Fatalf("ties = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			a.t.Fatalf("ties = %v, want %v", got, want)
		}
	}
}

const (
	qwenTitle  = "exec_command (acpterm MCP Server)"
	qwenTool   = "mcp__acpterm__exec_command"
	opencodeTC = "acpterm_exec_command"
	echoArgs   = `{"cmd":"echo hi","yield_time_ms":1000}`
)

// TestToolTiesByArgs: a command whose tools/call names no tool call is
// tied to the agent's tool call that reported the same arguments as its
// rawInput and names the offered tool, as Qwen Code (in its permission
// request, before the command) and opencode (in a tool_call_update,
// after it started) do.
func TestToolTiesByArgs(t *testing.T) {
	t.Run("qwen", func(t *testing.T) {
		a := newArgsTies(t)
		a.call("sess", "call_1", qwenTitle, `{}`)
		a.permission("sess", "call_1", echoArgs, qwenTool)
		// Key order, spacing: the same object.
		term := a.run(`{ "yield_time_ms": 1000, "cmd": "echo hi" }`)
		a.want(map[acp.TerminalID]acp.ToolCallID{term: "call_1"})
	})
	t.Run("gemini", func(t *testing.T) {
		// Only the allowed permission request reports the call before
		// the command; its end comes after.
		a := newArgsTies(t)
		a.geminiPermission("exec_command-1764780000000", qwenTitle, echoArgs, true)
		term := a.run(echoArgs)
		a.want(map[acp.TerminalID]acp.ToolCallID{term: "exec_command-1764780000000"})
	})
	t.Run("opencode", func(t *testing.T) {
		a := newArgsTies(t)
		term := a.run(echoArgs)
		a.call("sess", "call_2", opencodeTC, `{}`)
		a.want(nil)
		a.progress("call_2", acp.ToolCallStatusInProgress, echoArgs)
		a.want(map[acp.TerminalID]acp.ToolCallID{term: "call_2"})
	})
	t.Run("opencode after the command", func(t *testing.T) {
		// A short command has ended and been released before opencode
		// reports its call: it is tied all the same, soon after.
		a := newArgsTies(t)
		term := a.run(echoArgs)
		a.ties.TerminalEvent(terminal.Event{Kind: terminal.EventReleased, SessionID: "mcp-1", TerminalID: term})
		a.call("sess", "call_3", opencodeTC, `{}`)
		a.progress("call_3", acp.ToolCallStatusInProgress, echoArgs)
		a.want(map[acp.TerminalID]acp.ToolCallID{term: "call_3"})
		// And the next command with the same arguments is not
		// ambiguous with it.
		term2 := a.run(echoArgs)
		a.call("sess", "call_4", opencodeTC, echoArgs)
		a.want(map[acp.TerminalID]acp.ToolCallID{term: "call_3", term2: "call_4"})
	})
}

// TestToolTiesByArgsRefused: each rule of the tie by arguments, broken
// alone, leaves the terminal on its own.
func TestToolTiesByArgsRefused(t *testing.T) {
	for name, steps := range map[string]func(a *argsTies) acp.TerminalID{
		"other session": func(a *argsTies) acp.TerminalID {
			a.call("other", "c", opencodeTC, echoArgs)
			return a.run(echoArgs)
		},
		"other session's permission": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", qwenTitle, `{}`)
			a.permission("other", "c", echoArgs, qwenTool)
			return a.run(echoArgs)
		},
		"refused permission of a call never reported": func(a *argsTies) acp.TerminalID {
			a.geminiPermission("c", qwenTitle, echoArgs, false)
			return a.run(echoArgs)
		},
		"permission of a call never reported, not naming the tool": func(a *argsTies) acp.TerminalID {
			a.geminiPermission("c", "exec_command (other MCP Server)", echoArgs, true)
			return a.run(echoArgs)
		},
		"permission whose content is no JSON object": func(a *argsTies) acp.TerminalID {
			a.geminiPermission("c", qwenTitle, `[Payload omitted due to length with parameters: cmd]`, true)
			return a.run(echoArgs)
		},
		"permission with two texts": func(a *argsTies) acp.TerminalID {
			title := qwenTitle
			text := &acp.Content{Content: &acp.TextContent{Text: echoArgs}}
			a.ties.Permission(&acp.RequestPermissionRequest{SessionID: "sess", ToolCall: acp.ToolCallUpdate{ToolCallID: "c", Title: &title,
				Content: []acp.ToolCallContent{text, text}}}, true)
			return a.run(echoArgs)
		},
		"not the offered tool": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", "bash", echoArgs)
			a.permission("sess", "c", echoArgs, "mcp__other__exec_command")
			return a.run(echoArgs)
		},
		"other arguments": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, `{"cmd":"echo hi","yield_time_ms":1000,"tty":false}`)
			return a.run(echoArgs)
		},
		"a number written otherwise": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, `{"cmd":"echo hi","yield_time_ms":1e3}`)
			return a.run(echoArgs)
		},
		"ended": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, echoArgs)
			a.progress("c", acp.ToolCallStatusCompleted, "")
			return a.run(echoArgs)
		},
		"two candidates": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c1", opencodeTC, echoArgs)
			a.call("sess", "c2", qwenTitle, echoArgs)
			return a.run(echoArgs)
		},
		"two candidates later": func(a *argsTies) acp.TerminalID {
			term := a.run(echoArgs)
			a.call("sess", "c1", opencodeTC, `{}`)
			a.call("sess", "c2", opencodeTC, echoArgs)
			a.progress("c1", acp.ToolCallStatusInProgress, echoArgs) // c2 took it first
			a.rec.mu.Lock()
			defer a.rec.mu.Unlock()
			if len(a.rec.evs) != 1 || a.rec.evs[0].Info.ToolCall != "c2" {
				a.t.Errorf("ties = %+v, want the first only", a.rec.evs)
			}
			a.rec.evs = nil
			return term
		},
		"two terminals waiting": func(a *argsTies) acp.TerminalID {
			a.run(echoArgs)
			term := a.run(echoArgs)
			a.call("sess", "c", opencodeTC, echoArgs)
			return term
		},
		"already tied by its ID": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, echoArgs)
			a.terms++
			id := acp.TerminalID("t" + strings.Repeat("x", a.terms))
			a.ties.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "mcp-1", TerminalID: id, Info: &terminal.Info{TerminalID: id}})
			a.shown.mark("mcp-1", id)
			a.ties.Hint(context.Background(), mcpexec.ToolCallHint{SessionID: "mcp-1", TerminalID: id, ToolCallID: "c"})
			a.rec.mu.Lock()
			a.rec.evs = nil // the ID's tie
			a.rec.mu.Unlock()
			return a.run(echoArgs)
		},
		"released long before the call": func(a *argsTies) acp.TerminalID {
			now := time.Now()
			a.ties.now = func() time.Time { return now }
			term := a.run(echoArgs)
			a.ties.TerminalEvent(terminal.Event{Kind: terminal.EventReleased, SessionID: "mcp-1", TerminalID: term})
			now = now.Add(releasedTieWindow + time.Second)
			a.call("sess", "c", opencodeTC, echoArgs)
			return term
		},
		"released before it was told": func(a *argsTies) acp.TerminalID {
			a.terms++
			id := acp.TerminalID("t" + strings.Repeat("x", a.terms))
			a.ties.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "mcp-1", TerminalID: id, Info: &terminal.Info{TerminalID: id}})
			a.ties.TerminalEvent(terminal.Event{Kind: terminal.EventReleased, SessionID: "mcp-1", TerminalID: id})
			a.shown.mark("mcp-1", id)
			a.ties.Hint(context.Background(), mcpexec.ToolCallHint{SessionID: "mcp-1", TerminalID: id, Arguments: json.RawMessage(echoArgs)})
			a.call("sess", "c", opencodeTC, echoArgs)
			return id
		},
		"too long": func(a *argsTies) acp.TerminalID {
			long := `{"cmd":"` + strings.Repeat("a", maxTieInput) + `"}`
			a.call("sess", "c", opencodeTC, long)
			return a.run(long)
		},
		"not an object": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, `["echo hi"]`)
			return a.run(`["echo hi"]`)
		},
		"trailing data": func(a *argsTies) acp.TerminalID {
			a.call("sess", "c", opencodeTC, echoArgs+`{}`)
			return a.run(echoArgs + `{}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newArgsTies(t)
			steps(a)
			a.want(nil)
		})
	}
}

// TestToolTiesByArgsBounded: terminals waiting for a call with their
// arguments are bounded.
func TestToolTiesByArgsBounded(t *testing.T) {
	a := newArgsTies(t)
	for i := range 3 * maxPendingTies {
		a.run(`{"cmd":"echo ` + strings.Repeat("x", i) + `"}`)
	}
	a.ties.mu.Lock()
	n := len(a.ties.byArgs)
	a.ties.mu.Unlock()
	if n != maxPendingTies {
		t.Errorf("%d terminals waiting, want %d", n, maxPendingTies)
	}
}

func FuzzCanonicalArgs(f *testing.F) {
	for _, s := range []string{echoArgs, `{}`, `{"a":1.0,"b":[1,{"c":null}]}`, `[1]`, `{"a":1}x`, `"s"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := canonicalArgs(json.RawMessage(s))
		if !ok {
			return
		}
		// Canonical is a fixed point, and names the same object.
		if c2, ok2 := canonicalArgs(json.RawMessage(c)); !ok2 || c2 != c {
			t.Fatalf("canonical %q of %q is not canonical: %q %v", c, s, c2, ok2)
		}
		if len(c) > maxTieInput {
			t.Fatalf("canonical form of %d bytes", len(c))
		}
	})
}
