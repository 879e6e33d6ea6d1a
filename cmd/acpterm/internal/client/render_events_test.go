package client

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// The JSON events a run writes, its renderer's (package render) and the
// client's own replay marks (switchRenderer), are held to the table of
// them in the command reference (docs/cli.md, "JSON events"). Render's
// tests hold each event to the rest of what it promises.

// readmeJSONEvents is docs/cli.md's table of JSON events: for each event
// name, every name its row puts in backquotes (fields and values).
func readmeJSONEvents(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "With `--format json`, stdout carries one JSON object per line")
	if !ok {
		t.Fatal("no JSON events section in docs/cli.md")
	}
	code := regexp.MustCompile("`([^`]*)`")
	events := map[string]map[string]bool{}
	inTable := false
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") || strings.Contains(cells[1], "`event`") {
			continue
		}
		names := map[string]bool{}
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			names[m[1]] = true
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			events[m[1]] = names
		}
	}
	if len(events) == 0 {
		t.Fatal("no events in docs/cli.md's table")
	}
	return events
}

// allJSONEvents is the output of a run that makes every event acpterm
// writes, with every optional field set.
func allJSONEvents(t *testing.T) string {
	var out bytes.Buffer
	s := newSwitchRenderer(&Config{Stdout: &out, Format: FormatJSON})
	s.beginReplay("sess_1")
	s.endReplay("sess_1")
	s.resumed("sess_1")
	s.fresh()
	box := &sandbox.Applied{Hidden: []string{"/h/.ssh"}, Shown: []string{"/h/.ssh/config"}, Redacted: []string{"/h/.npmrc"}, Missing: []string{"x"}}
	s.emitJSON((&driver{cfg: Config{SandboxAgent: true}, cmdSandbox: box, agentSandbox: box}).sandboxEvent())
	r := s.cur
	r.(render.SessionRenderer).ShowSession(render.SessionInfo{SessionID: "sess_1", Mode: "code", Model: "m1"})
	r.Permission(render.PermissionEvent{SessionID: "sess_1", ToolCallID: "call_1", Title: "edit", Decision: "allow_once", OptionID: "yes"})
	r.Permission(render.PermissionEvent{SessionID: "sess_1", Title: "ls", TerminalCommand: "ls", Decision: "allow_once", Reason: "--approve-all"})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "sess_1", TerminalID: "term_1",
		Info: &terminal.Info{Command: "ls", Args: []string{"-l"}, Cwd: "/w", PID: 7, OutputByteLimit: 10,
			Sandbox: &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork, Missing: []string{"network"}}}})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "sess_1", TerminalID: "shown_1",
		Info: &terminal.Info{Command: "make", Cwd: "/w", Display: true}})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: "term_1", Data: []byte("x"), Dropped: 3})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: "term_1", Status: &terminal.ExitStatus{Signal: acp.Ptr("SIGKILL")}, TimedOut: true})
	raw := json.RawMessage(`{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`)
	var n acp.SessionNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	r.SessionUpdate(&n, raw)
	r.Finish(acp.StopReasonEndTurn)
	r.Error("failed", 3)
	return out.String()
}

// TestJSONEventsDocumented: every event acpterm writes, every field of it
// (and of its sandbox object), and every state of a replay event, is named
// in docs/cli.md's row for that event.
func TestJSONEventsDocumented(t *testing.T) {
	doc := readmeJSONEvents(t)
	for _, line := range strings.Split(strings.TrimSuffix(allJSONEvents(t), "\n"), "\n") {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var name string
		_ = json.Unmarshal(ev["event"], &name)
		names, ok := doc[name]
		if !ok {
			t.Errorf("event %q is not in docs/cli.md's table (%s)", name, line)
			continue
		}
		for k := range ev {
			if k != "event" && !names[k] {
				t.Errorf("field %q of %q is not in docs/cli.md (%s)", k, name, line)
			}
		}
		if sb, ok := ev["sandbox"]; ok {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(sb, &m)
			for k := range m {
				if !names[k] {
					t.Errorf("field sandbox.%s of %q is not in docs/cli.md", k, name)
				}
			}
		}
		if st, ok := ev["state"]; ok {
			var v string
			_ = json.Unmarshal(st, &v)
			if !names[v] {
				t.Errorf("state %q of %q is not in docs/cli.md", v, name)
			}
		}
	}
}
