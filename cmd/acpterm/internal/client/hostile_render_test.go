package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// modeRefuser is an in-process agent that answers session/set_mode with an
// error whose message is hostile.
type modeRefuser struct{}

func (modeRefuser) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (modeRefuser) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}

func (modeRefuser) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (modeRefuser) Cancel(context.Context, *acp.CancelNotification) error { return nil }

func (modeRefuser) SetSessionMode(context.Context, *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: "no" + evil}
}

// TestSetCommandAgentErrorHostile: /mode with an agent that refuses it
// with a hostile error message shows the message on the session's
// terminal with its escapes visible.
func TestSetCommandAgentErrorHostile(t *testing.T) {
	got := refusedModeOutput(t, modeRefuser{})
	if off := screenOffence(got); off != "" {
		t.Fatalf("%s reached the terminal:\n%q", off, got)
	}
	if !strings.Contains(got, `no<\x1b]52;c;aGk=`) {
		t.Fatalf("the agent's message is not shown: %q", got)
	}
}

// refusedModeOutput runs /mode b against agent, which refuses it, and
// returns what the session's terminal got.
func refusedModeOutput(t *testing.T, agent acp.Agent) string {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	ac := acp.NewAgentConn(agent, agentIn, agentOut, nil)
	conn := acp.NewClientConn(listingClient{}, clientIn, clientOut, nil)
	defer func() {
		conn.Close()
		ac.Close()
		for _, c := range []io.Closer{agentIn, clientOut, clientIn, agentOut} {
			c.Close()
		}
	}()
	var tty bytes.Buffer
	d := &driver{cfg: Config{TTYOut: &tty, Stderr: io.Discard, InitTimeout: 10 * time.Second},
		conn: conn, quit: make(chan struct{}), r: NewTextRenderer(io.Discard, nil)}
	d.view = newSessionView(d.r)
	d.view.setState(&sessionState{sid: "s", modes: &acp.SessionModeState{CurrentModeID: "a",
		AvailableModes: []acp.SessionMode{{ID: "a", Name: "A"}, {ID: "b", Name: "B"}}}})
	if end := d.setCommand(context.Background(), settingMode, "b"); end {
		t.Fatal("the session ended")
	}
	return tty.String()
}

// TestJSONSessionUpdateInvalidUTF8: the verbatim path of --format json
// writes the agent's bytes as they came; invalid UTF-8 in them (a lone
// 0x9b is an 8-bit CSI to a terminal that is not in UTF-8) becomes U+FFFD,
// as encoding/json decodes it, so the output is valid UTF-8 and decodes
// to the same strings.
func TestJSONSessionUpdateInvalidUTF8(t *testing.T) {
	raw := json.RawMessage("{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"a\x9b2Jb\xff\xfe\"}}}")
	var n acp.SessionNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := NewJSONRenderer(&out, nil)
	r.SessionUpdate(&n, raw)
	got := out.String()
	if off := screenOffence(got); off != "" {
		t.Fatalf("%s in the JSON output: %q", off, got)
	}
	var ev struct {
		Update struct {
			Content struct{ Text string }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &ev); err != nil {
		t.Fatal(err)
	}
	if want := n.Update.(*acp.AgentMessageChunk).Content.(*acp.TextContent).Text; ev.Update.Content.Text != want {
		t.Fatalf("decodes to %q, want %q", ev.Update.Content.Text, want)
	}
}

// runningTools makes a text renderer with n tool calls running.
func runningTools(o TextOptions, n int) (*textRenderer, *fakeClock) {
	clock := newFakeClock()
	o.Now = clock.Now
	r := NewTextRenderer(io.Discard, &o).(*textRenderer)
	for i := range n {
		r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", i)),
			Title: "t", Status: acp.ToolCallStatusInProgress}}, nil)
	}
	return r, clock
}

// allocatedBy is the number of bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTextRendererManyRunningTools: what a redraw or the end of a tool
// call costs does not grow with the number of tool calls running: an agent
// that starts thousands and never ends them must not make each later
// update cost thousands of steps. (Measured in allocations, which a
// loaded machine does not change.)
func TestTextRendererManyRunningTools(t *testing.T) {
	const many, few = 20000, 20
	t.Run("live region", func(t *testing.T) {
		cost := func(n int) uint64 {
			r, clock := runningTools(TextOptions{Live: true, Size: func() (int, int) { return 100, 30 }}, n)
			defer r.Finish(acp.StopReasonEndTurn)
			return allocatedBy(func() {
				for range 20 {
					clock.Advance(100 * time.Millisecond)
					r.Tick()
				}
			})
		}
		small, large := cost(100), cost(2000)
		if large > 2*small {
			t.Fatalf("20 redraws allocated %d bytes with 2000 tool calls running, %d with 100", large, small)
		}
	})
	t.Run("ending them", func(t *testing.T) {
		r, _ := runningTools(TextOptions{}, many)
		defer r.Finish(acp.StopReasonEndTurn)
		done := acp.ToolCallStatusCompleted
		n := allocatedBy(func() {
			for i := range many {
				r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", i)), Status: &done}}, nil)
			}
		})
		if n > many*4<<10 {
			t.Fatalf("ending %d tool calls allocated %d MiB", many, n>>20)
		}
	})
}

// TestToolTextBounded: of a tool call's text content the renderer keeps
// what it shows (TailLines lines, each cut to what a line can show), not
// the whole text, which stays in memory until the turn ends.
func TestToolTextBounded(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := NewTextRenderer(&out, &TextOptions{Now: clock.Now}).(*textRenderer)
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
	d := newDisplayTerminals(&countingRenderer{t: t, created: map[string]bool{}, exited: map[string]bool{}})
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
	r := NewTextRenderer(&out, &TextOptions{Now: newFakeClock().Now}).(*textRenderer)
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
	r := NewTextRenderer(&out, &TextOptions{Now: newFakeClock().Now}).(*textRenderer)
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
	r := NewTextRenderer(&out, &TextOptions{Live: true, Size: func() (int, int) { return 100, 30 }, Now: newFakeClock().Now}).(*textRenderer)
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
