package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
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
		r.add(fmt.Sprintf("created %s %q cwd=%q display=%v", ev.TerminalID, ev.Info.Command, ev.Info.Cwd, isDisplay(ev.Info)))
	case terminal.EventOutput:
		r.add(fmt.Sprintf("output %s %q", ev.TerminalID, ev.Data))
	case terminal.EventExited:
		r.add(fmt.Sprintf("exited %s %s", ev.TerminalID, ev.Status))
	}
}

func (r *callLog) Permission(PermissionEvent) {}
func (r *callLog) Tick()                      {}
func (r *callLog) Suspend() func()            { return func() {} }
func (r *callLog) Finish(acp.StopReason)      {}
func (r *callLog) Error(string, int)          {}

func TestDisplayTerminals(t *testing.T) {
	log := &callLog{}
	d := newDisplayTerminals(log)
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
