package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// callLog is a Renderer that notes what it is given, one line per call.
type callLog struct {
	mu  sync.Mutex
	log []string
}

func (r *callLog) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *callLog) SessionUpdate(n *acp.SessionNotification, _ json.RawMessage) {
	r.add(fmt.Sprintf("update %T", n.Update))
}

func (r *callLog) TerminalEvent(ev terminal.Event) {
	switch ev.Kind {
	case terminal.EventCreated:
		r.add(fmt.Sprintf("created %s %q cwd=%q display=%v", ev.TerminalID, ev.Info.Command, ev.Info.Cwd, ev.Info.Display))
	case terminal.EventOutput:
		r.add(fmt.Sprintf("output %s %q", ev.TerminalID, ev.Data))
	case terminal.EventExited:
		r.add(fmt.Sprintf("exited %s %s", ev.TerminalID, ev.Status))
	}
}

func (r *callLog) Permission(render.PermissionEvent) {}
func (r *callLog) Tick()                             {}
func (r *callLog) Suspend() func()                   { return func() {} }
func (r *callLog) Finish(acp.StopReason)             {}
func (r *callLog) Error(string, int)                 {}

func TestDisplayTerminals(t *testing.T) {
	log := &callLog{}
	d := render.NewDisplayTerminals(log)
	send := func(u acp.SessionUpdate) {
		d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: u}, nil)
	}
	meta := func(kv ...string) acp.Meta {
		m := acp.Meta{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	title := "ls -l"
	send(&acp.ToolCall{ToolCallID: "c1", Title: "run", Meta: meta("terminal_info", `{"terminal_id":"t1","cwd":"/w"}`)})
	send(&acp.ToolCallUpdate{ToolCallID: "c1", Meta: meta("terminal_output", `{"terminal_id":"t1","data":"a\n"}`)})
	send(&acp.ToolCallUpdate{ToolCallID: "c1", Meta: meta("terminal_output", `{"terminal_id":"t1","data":""}`)})
	// Output and exit in one update, for a terminal never introduced.
	send(&acp.ToolCallUpdate{ToolCallID: "c2", Title: &title, Meta: meta(
		"terminal_output", `{"terminal_id":"t2","data":"b"}`,
		"terminal_exit", `{"terminal_id":"t2","exit_code":null,"signal":"SIGKILL"}`)})
	send(&acp.ToolCallUpdate{ToolCallID: "c1", Meta: meta("terminal_exit", `{"terminal_id":"t1","exit_code":3}`)})
	// Malformed or foreign _meta is passed through and otherwise ignored.
	send(&acp.ToolCallUpdate{ToolCallID: "c1", Meta: meta("terminal_output", `"nonsense"`, "other", `{}`)})
	send(&acp.ToolCallUpdate{ToolCallID: "c1", Meta: meta("terminal_exit", `{"exit_code":1}`)})
	send(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "done"}})

	want := []string{
		`created t1 "run" cwd="/w" display=true`,
		`update *acp.ToolCall`,
		`output t1 "a\n"`,
		`update *acp.ToolCallUpdate`,
		`update *acp.ToolCallUpdate`,
		`created t2 "ls -l" cwd="" display=true`,
		`output t2 "b"`,
		`exited t2 killed by SIGKILL`,
		`update *acp.ToolCallUpdate`,
		`exited t1 exit 3`,
		`update *acp.ToolCallUpdate`,
		`update *acp.ToolCallUpdate`,
		`update *acp.ToolCallUpdate`,
		`update *acp.AgentMessageChunk`,
	}
	if got := strings.Join(log.log, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("renderer got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// v2Update decodes one v2 session update as the connection does: into
// v1's catch-all variant.
func v2Update(t testing.TB, raw string) acp.SessionUpdate {
	t.Helper()
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+raw+`}`), &n); err != nil {
		t.Fatal(err)
	}
	return n.Update
}

func TestDisplayTerminalsV2(t *testing.T) {
	log := &callLog{}
	d := render.NewDisplayTerminals(log)
	send := func(raw string) {
		d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: v2Update(t, raw)}, nil)
	}
	send(`{"sessionUpdate":"terminal_update","terminalId":"t1","command":"make test","cwd":"/w"}`)
	d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: "c1", Title: "run",
		Content: []acp.ToolCallContent{acp.TerminalContent("t1")}}}, nil)
	send(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"YQo="}`)          // "a\n"
	send(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"w6k="}`)          // "é"
	send(`{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"YQrDqWJj"}}`) // "a\néb": "bc" is new
	send(`{"sessionUpdate":"terminal_update","terminalId":"t1","output":{"data":"eA=="}}`)     // shorter: nothing
	send(`{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":2}}`)
	send(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"eA=="}`) // after the exit: dropped
	send(`{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"signal":"SIGTERM"}}`)
	// A terminal first seen on a chunk; malformed and foreign updates.
	send(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t2","data":"Yg=="}`)
	send(`{"sessionUpdate":"terminal_update","terminalId":"t2","exitStatus":{"signal":"SIGKILL","exitCode":null}}`)
	send(`{"sessionUpdate":"terminal_output_chunk","terminalId":"t3","data":"not base64!"}`)
	send(`{"sessionUpdate":"terminal_update","command":"no id"}`)
	send(`{"sessionUpdate":"something_else","terminalId":"t4"}`)

	want := []string{
		`created t1 "make test" cwd="/w" display=true`,
		`update *acp.UnknownSessionUpdate`,
		`update *acp.ToolCall`,
		`output t1 "a\n"`,
		`update *acp.UnknownSessionUpdate`,
		`output t1 "é"`,
		`update *acp.UnknownSessionUpdate`,
		`output t1 "bc"`,
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
		"exited t1 " + exitCode(2),
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
		`created t2 "" cwd="" display=true`,
		`output t2 "b"`,
		`update *acp.UnknownSessionUpdate`,
		"exited t2 " + exitSignal("SIGKILL"),
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
		`update *acp.UnknownSessionUpdate`,
	}
	if got := strings.Join(log.log, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("renderer got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// countingRenderer checks the display adapter's invariants on any input:
// one created event per terminal, before its other events; nothing after
// an exit.
type countingRenderer struct {
	callLog
	t       *testing.T
	created map[acp.TerminalID]bool
	exited  map[acp.TerminalID]bool
}

func (r *countingRenderer) TerminalEvent(ev terminal.Event) {
	switch ev.Kind {
	case terminal.EventCreated:
		if r.created[ev.TerminalID] || !ev.Info.Display {
			r.t.Fatalf("terminal %q created twice or not as a display", ev.TerminalID)
		}
		r.created[ev.TerminalID] = true
	default:
		if !r.created[ev.TerminalID] || r.exited[ev.TerminalID] {
			r.t.Fatalf("%v event of terminal %q before its creation or after its exit", ev.Kind, ev.TerminalID)
		}
		if ev.Kind == terminal.EventExited {
			r.exited[ev.TerminalID] = true
		}
	}
}

// FuzzDisplayTerminals feeds agent-controlled session updates, v2 and
// _meta, to the display adapter.
func FuzzDisplayTerminals(f *testing.F) {
	for _, seed := range []string{
		`{"sessionUpdate":"terminal_update","terminalId":"t1","command":"ls","cwd":"/w","output":{"data":"YQ=="},"exitStatus":{"exitCode":-1}}`,
		`{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"YQo="}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c","title":"x","_meta":{"terminal_info":{"terminal_id":"t1"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"t1","data":"x"},"terminal_exit":{"terminal_id":"t1","exit_code":0,"signal":null}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var n acp.SessionNotification
		if json.Unmarshal([]byte(`{"sessionId":"s","update":`+raw+`}`), &n) != nil {
			return
		}
		r := &countingRenderer{t: t, created: map[acp.TerminalID]bool{}, exited: map[acp.TerminalID]bool{}}
		d := render.NewDisplayTerminals(r)
		for range 2 {
			d.SessionUpdate(&n, nil)
		}
	})
}

func exitCode(c uint32) string     { return terminal.ExitStatus{ExitCode: &c}.String() }
func exitSignal(sig string) string { return terminal.ExitStatus{Signal: &sig}.String() }

// TestDisplayAgentSandbox: a command the agent ran itself is shown as run
// by the agent, with the agent's sandbox when it is confined, in text and
// JSON; acpterm's own commands are not.
func TestDisplayAgentSandbox(t *testing.T) {
	wire := `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"ls","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"t"}],"_meta":{"terminal_info":{"terminal_id":"t"}}}}
{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"t","exit_code":0}}}}`
	applied := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork, LandlockABI: 7}
	for _, tc := range []struct {
		name       string
		sb         *sandbox.Applied
		text, json string
	}{
		{"unconfined", nil, "└ exit 0 · 100ms · run by the agent\n", `"display":true}`},
		{"confined", applied, "└ exit 0 · 100ms · run by the agent, sandbox: workspace-write, network denied\n",
			`"display":true,"sandbox":{"mode":"workspace-write","network":"deny"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				var out bytes.Buffer
				clock := rendertest.NewClock()
				var r render.Renderer = render.NewText(&out, &render.TextOptions{Now: clock.Now})
				want := tc.text
				if format == "json" {
					r, want = render.NewJSON(&out, clock.Now), tc.json
				}
				d := render.NewDisplayTerminals(r)
				d.SetAgentSandbox(func() *sandbox.Applied { return tc.sb })
				for i, line := range strings.Split(wire, "\n") {
					if i > 0 {
						clock.Advance(100 * time.Millisecond)
					}
					var n acp.SessionNotification
					if err := json.Unmarshal([]byte(line), &n); err != nil {
						t.Fatal(err)
					}
					d.SessionUpdate(&n, json.RawMessage(line))
				}
				r.Finish(acp.StopReasonEndTurn)
				if !strings.Contains(out.String(), want) {
					t.Errorf("%s:\n%s\nwant it to hold %q", format, out.String(), want)
				}
			}
		})
	}
}

// TestDisplayCapabilities: DisplayCapabilities asks for the three
// dialects the adapter reads (Zed's, JetBrains', the v2 draft's).
func TestDisplayCapabilities(t *testing.T) {
	got := render.DisplayCapabilities()
	for _, key := range []string{"terminal_output", "terminal_output_delta", "terminal_update"} {
		if v := string(got[key]); v != "true" {
			t.Errorf("_meta.%s = %q, want true", key, v)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d keys: %v", len(got), got)
	}
}
