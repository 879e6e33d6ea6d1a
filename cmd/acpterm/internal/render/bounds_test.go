package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// Internal tests: what the renderers and the display adapter keep in
// memory for as long as a turn or a session lasts is bounded, whatever the
// agent sends. What is kept does not show in the output, which is why
// these tests look at the renderers' state; what the output shows of the
// same inputs is checked from outside (package render_test).

// TestToolTextBounded: of a tool call's text content the renderer keeps
// what it shows (TailLines lines, each cut to what a line can show), not
// the whole text, which stays in memory until the turn ends.
func TestToolTextBounded(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := NewText(&out, &TextOptions{Now: clock.Now}).(*textRenderer)
	text := strings.Repeat("line\n", 100000) + strings.Repeat("y", 1<<20)
	r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: "c", Title: "read", Status: acp.ToolCallStatusInProgress,
		Content: []acp.ToolCallContent{acp.TextToolCallContent(strings.Repeat("z", 1<<20)), acp.TextToolCallContent(text)}}}, nil)
	kept := 0
	for _, l := range r.tools["c"].texts {
		kept += len(l)
	}
	if len(r.tools["c"].texts) > r.o.TailLines || kept > 64<<10 {
		t.Fatalf("keeps %d lines, %d bytes", len(r.tools["c"].texts), kept)
	}
	done := acp.ToolCallStatusCompleted
	r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCallUpdate{ToolCallID: "c", Status: &done}}, nil)
	r.Finish(acp.StopReasonEndTurn)
	if want := "  │ line\n  │ … 99982 more lines\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%.300s", want, out.String())
	}
	if !utf8.ValidString(out.String()) {
		t.Fatal("invalid UTF-8")
	}
}

// TestDisplayTitlesBounded: the tool call titles kept to name display
// terminals, for as long as the session lasts, are bounded in number and
// size, and those of ended tool calls are not kept.
func TestDisplayTitlesBounded(t *testing.T) {
	d := NewDisplayTerminals(NewText(io.Discard, nil))
	title := strings.Repeat("t", 64<<10)
	done := acp.ToolCallStatusCompleted
	for i := range 3000 {
		id := acp.ToolCallID(fmt.Sprint("call_", i))
		d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: id, Title: title, Status: acp.ToolCallStatusInProgress}}, nil)
		if i%2 == 0 {
			d.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCallUpdate{ToolCallID: id, Status: &done}}, nil)
		}
	}
	kept := 0
	for _, s := range d.titles {
		kept += len(s)
	}
	if len(d.titles) > maxDisplayTitles || kept > 2<<20 {
		t.Fatalf("%d titles kept, %d MiB", len(d.titles), kept>>20)
	}
	if _, ok := d.titles["call_2998"]; ok {
		t.Fatal("the title of an ended tool call is kept")
	}
}

// TestTextRendererTerminalsBounded: of the terminals of a turn, which an
// agent may create and release without end, the newest maxKeptTails keep
// their lines (those released going first), the others only their
// counts, and every command line is cut.
func TestTextRendererTerminalsBounded(t *testing.T) {
	var out bytes.Buffer
	r := NewText(&out, &TextOptions{Now: rendertest.NewClock().Now}).(*textRenderer)
	zero := uint32(0)
	event := func(kind terminal.EventKind, id string, data string) {
		ev := terminal.Event{Kind: kind, SessionID: "s", TerminalID: acp.TerminalID(id), Data: []byte(data)}
		switch kind {
		case terminal.EventCreated:
			ev.Info = &terminal.Info{SessionID: "s", TerminalID: acp.TerminalID(id), Command: "echo " + strings.Repeat("a", 64<<10), OutputByteLimit: 1 << 20}
		case terminal.EventExited, terminal.EventReleased:
			ev.Status = &terminal.ExitStatus{ExitCode: &zero}
		}
		r.TerminalEvent(ev)
	}
	// The first runs on; the others run, print and are released.
	event(terminal.EventCreated, "long", "")
	event(terminal.EventOutput, "long", "still here\n")
	const n = 3 * maxKeptTails
	for i := range n {
		id := fmt.Sprint("t", i)
		event(terminal.EventCreated, id, "")
		event(terminal.EventOutput, id, fmt.Sprintf("line of %s\n", id))
		event(terminal.EventExited, id, "")
		event(terminal.EventReleased, id, "")
	}
	kept := 0
	for _, tv := range r.termOrder {
		if !tv.tail.forgotten {
			kept++
		}
		if len(tv.command) > maxShownCommand+len("…") {
			t.Fatalf("terminal %s keeps a command of %d bytes", tv.id, len(tv.command))
		}
	}
	if kept > maxKeptTails {
		t.Fatalf("%d terminals keep their lines, want at most %d", kept, maxKeptTails)
	}
	if r.terms["long"].tail.forgotten {
		t.Fatal("the running terminal lost its lines before released ones")
	}
	r.Finish(acp.StopReasonEndTurn)
	for _, want := range []string{"still here", fmt.Sprintf("line of t%d", n-1), "not kept: more than"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "line of t0\n") {
		t.Error("the oldest released terminal kept its lines")
	}
}

// TestTextRendererToolsBounded: of the tool calls of a turn, which an
// agent may start without end, the text renderer remembers the newest
// maxPrintedTools once printed, emptied, and cuts titles; a late update
// to a printed one does not print it again, and an ID too long to keep is
// not shown.
func TestTextRendererToolsBounded(t *testing.T) {
	var out bytes.Buffer
	r := NewText(&out, &TextOptions{Now: rendertest.NewClock().Now}).(*textRenderer)
	update := func(u acp.SessionUpdate) {
		r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: u}, nil)
	}
	title := strings.Repeat("t", 16<<10)
	const n = maxPrintedTools + 500
	for i := range n {
		update(&acp.ToolCall{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", i)), Title: title, Status: acp.ToolCallStatusCompleted,
			Content: []acp.ToolCallContent{acp.TextToolCallContent("done\n")}})
	}
	if len(r.tools) > maxPrintedTools {
		t.Fatalf("%d tool calls remembered", len(r.tools))
	}
	for id, tv := range r.tools {
		if len(tv.title) > maxShownCommand+len("…") || tv.texts != nil {
			t.Fatalf("%s keeps a title of %d bytes and %d lines of text", id, len(tv.title), len(tv.texts))
		}
	}
	// Names of terminals the renderer never had, by the thousand.
	var refs []acp.ToolCallContent
	for i := range 10000 {
		refs = append(refs, acp.TerminalContent(acp.TerminalID(fmt.Sprint("nope_", i))))
	}
	update(&acp.ToolCall{ToolCallID: "refs", Title: "refs", Status: acp.ToolCallStatusInProgress, Content: refs})
	if tv := r.tools["refs"]; len(tv.terminals) != 0 || len(r.embedded) != 0 {
		t.Fatalf("%d unknown terminals kept by the tool call, %d in all", len(tv.terminals), len(r.embedded))
	}
	before := out.Len()
	again := "late update"
	update(&acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", n-1)), Title: &again})
	update(&acp.ToolCall{ToolCallID: acp.ToolCallID(strings.Repeat("i", 2*maxToolID)), Title: "long id", Status: acp.ToolCallStatusCompleted})
	r.Finish(acp.StopReasonEndTurn)
	if rest := out.String()[before:]; strings.Contains(rest, again) || strings.Contains(rest, "long id") {
		t.Fatalf("printed after the turn's tool calls:\n%.300s", rest)
	}
}

// TestTextRendererSuspendedBounded: while a question is on the screen
// (Suspend), what the agent sends waits in the queue up to its bounds;
// past them it is counted, not kept, and said when the question ends.
func TestTextRendererSuspendedBounded(t *testing.T) {
	var out bytes.Buffer
	r := NewText(&out, &TextOptions{Live: true, Size: func() (int, int) { return 100, 30 }, Now: rendertest.NewClock().Now}).(*textRenderer)
	resume := r.Suspend()
	line := strings.Repeat("m", 1000) + "\n"
	for range 20000 { // 20 MB of message
		r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: line}}}, nil)
	}
	for i := range 2 * maxSuspendedItems {
		r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: acp.ToolCallID(fmt.Sprint("c", i)), Title: "t", Status: acp.ToolCallStatusCompleted}}, nil)
	}
	if r.queuedProse > maxSuspendedProse+len(line)+1 || len(r.queue) > maxSuspendedItems {
		t.Fatalf("%d bytes and %d items wait while a question is open", r.queuedProse, len(r.queue))
	}
	if out.Len() != 0 {
		t.Fatalf("printed %d bytes while a question was open", out.Len())
	}
	resume()
	r.Finish(acp.StopReasonEndTurn)
	if !strings.Contains(out.String(), "while a question was open, the agent sent more than acpterm keeps") {
		t.Fatalf("no note of what was not kept:\n%.300s", out.String()[max(0, out.Len()-300):])
	}
}

// TestDisplayTerminalsKnownBounded: the display terminals remembered are
// bounded, however many the agent announces and never ends (what is
// shown of them: TestDisplayTerminalsBounded).
func TestDisplayTerminalsKnownBounded(t *testing.T) {
	d := NewDisplayTerminals(NewText(io.Discard, nil))
	for i := range 3000 {
		var n acp.SessionNotification
		raw := fmt.Sprintf(`{"sessionId":"s","update":{"sessionUpdate":"terminal_output_chunk","terminalId":"run_%d","data":"YQ=="}}`, i)
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			t.Fatal(err)
		}
		d.SessionUpdate(&n, nil)
	}
	if len(d.known) > maxDisplayTerminals {
		t.Fatalf("%d display terminals remembered", len(d.known))
	}
}
