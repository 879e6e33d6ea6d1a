package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDisplayTerminalsBounded: what is remembered of display terminals,
// for as long as the session lasts, is bounded whatever the agent
// announces: any number of terminals, ids, commands and signals of any
// length. A terminal is still shown after thousands of others ended.
func TestDisplayTerminalsBounded(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		r := &countingRenderer{t: t, created: map[acp.TerminalID]bool{}, exited: map[acp.TerminalID]bool{}}
		d := render.NewDisplayTerminals(r)
		send := func(raw string) {
			d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: v2Update(t, raw)}, nil)
		}
		// Thousands of commands, each run to its end, as in a long session.
		for i := range 3000 {
			send(fmt.Sprintf(`{"sessionUpdate":"terminal_update","terminalId":"done_%d","command":"ls"}`, i))
			send(fmt.Sprintf(`{"sessionUpdate":"terminal_update","terminalId":"done_%d","exitStatus":{"exitCode":0}}`, i))
		}
		if !r.created["done_2999"] || !r.exited["done_2999"] {
			t.Fatal("a terminal announced after thousands of ended ones is not shown")
		}
		// (Thousands never ended: TestDisplayTerminalsKnownBounded.)
	})
	t.Run("sizes", func(t *testing.T) {
		d := render.NewDisplayTerminals(render.NewText(io.Discard, &render.TextOptions{Now: rendertest.NewClock().Now}))
		long := strings.Repeat("x", 32<<10)
		before := heapInUse()
		for i := range 50 {
			for _, raw := range []string{
				fmt.Sprintf(`{"sessionUpdate":"terminal_update","terminalId":"%d%s","command":"ls"}`, i, long),
				fmt.Sprintf(`{"sessionUpdate":"terminal_update","terminalId":"t%d","command":"%s","exitStatus":{"signal":"%s"}}`, i, long, long),
			} {
				d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: v2Update(t, raw)}, nil)
			}
		}
		if kept := int64(heapInUse()) - int64(before); kept > 2<<20 {
			t.Fatalf("100 display terminals keep %d MiB", kept>>20)
		}
		runtime.KeepAlive(d)
	})
}

// TestDisplayTerminalsOwnID: display messages that name one of acpterm's
// own terminals (the agent has its id from terminal/create) neither add
// to the output of the command acpterm ran nor forge its exit status.
func TestDisplayTerminalsOwnID(t *testing.T) {
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: rendertest.NewClock().Now})
	d := render.NewDisplayTerminals(r)
	send := func(u acp.SessionUpdate) { d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: u}, nil) }
	// As the pump does for a terminal of the manager's.
	created := terminal.Event{Kind: terminal.EventCreated, SessionID: "s", TerminalID: "term_1",
		Info: &terminal.Info{SessionID: "s", TerminalID: "term_1", Command: "make", OutputByteLimit: 1 << 20}}
	d.OwnTerminal(created.TerminalID)
	r.TerminalEvent(created)
	send(&acp.ToolCall{ToolCallID: "c", Title: "run", Status: acp.ToolCallStatusInProgress,
		Content: []acp.ToolCallContent{acp.TerminalContent("term_1")}})
	send(&acp.ToolCallUpdate{ToolCallID: "c", Meta: acp.Meta{
		"terminal_output": json.RawMessage(`{"terminal_id":"term_1","data":"FORGED\n"}`),
		"terminal_exit":   json.RawMessage(`{"terminal_id":"term_1","exit_code":0}`)}})
	send(v2Update(t, `{"sessionUpdate":"terminal_update","terminalId":"term_1","output":{"data":"Rk9SR0VEMgo="},"exitStatus":{"exitCode":0}}`))
	code := uint32(3)
	r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, SessionID: "s", TerminalID: "term_1", Data: []byte("real\n")})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, SessionID: "s", TerminalID: "term_1", Status: &terminal.ExitStatus{ExitCode: &code}})
	send(&acp.ToolCallUpdate{ToolCallID: "c", Status: acp.Ptr(acp.ToolCallStatusCompleted)})
	r.Finish(acp.StopReasonEndTurn)
	if got := out.String(); strings.Contains(got, "FORGED") || !strings.Contains(got, "│ real") || !strings.Contains(got, exitCode(3)) {
		t.Fatalf("the agent's display messages reached acpterm's terminal:\n%s", got)
	}
}
