package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// step is one scripted input of a renderer: a session update, a terminal
// event, a permission decision, the clock moving, or a tick.
type step struct {
	update  acp.SessionUpdate
	term    *terminal.Event
	perm    *render.PermissionEvent
	advance time.Duration
	tick    bool
}

func play(r render.Renderer, clock *rendertest.Clock, steps []step) {
	for _, s := range steps {
		switch {
		case s.update != nil:
			// The raw params as an agent would send them, so the JSON
			// renderer takes its verbatim path.
			n := &acp.SessionNotification{SessionID: "sess_1", Update: s.update}
			raw, err := json.Marshal(n)
			if err != nil {
				panic(err)
			}
			r.SessionUpdate(n, raw)
		case s.term != nil:
			r.TerminalEvent(*s.term)
		case s.perm != nil:
			r.Permission(*s.perm)
		case s.advance > 0:
			clock.Advance(s.advance)
		case s.tick:
			r.Tick()
		}
	}
}

func msg(text string) step {
	return step{update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}}}
}

func thought(text string) step {
	return step{update: &acp.AgentThoughtChunk{Content: &acp.TextContent{Text: text}}}
}

func toolCall(id, title string, status acp.ToolCallStatus, terms ...string) step {
	tc := &acp.ToolCall{ToolCallID: acp.ToolCallID(id), Title: title, Kind: acp.ToolKindExecute, Status: status}
	for _, t := range terms {
		tc.Content = append(tc.Content, &acp.Terminal{TerminalID: acp.TerminalID(t)})
	}
	return step{update: tc}
}

func toolUpdate(id string, status acp.ToolCallStatus, terms ...string) step {
	u := &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(id), Status: &status}
	for _, t := range terms {
		u.Content = append(u.Content, &acp.Terminal{TerminalID: acp.TerminalID(t)})
	}
	return step{update: u}
}

func created(id, command string, args []string, limit uint64) step {
	return step{term: &terminal.Event{Kind: terminal.EventCreated, SessionID: "sess_1", TerminalID: acp.TerminalID(id),
		Info: &terminal.Info{SessionID: "sess_1", TerminalID: acp.TerminalID(id), Command: command, Args: args, Cwd: "/work", OutputByteLimit: limit, PID: 4242}}}
}

func output(id, data string) step {
	return step{term: &terminal.Event{Kind: terminal.EventOutput, SessionID: "sess_1", TerminalID: acp.TerminalID(id), Data: []byte(data)}}
}

func exited(id string, st terminal.ExitStatus) step {
	return step{term: &terminal.Event{Kind: terminal.EventExited, SessionID: "sess_1", TerminalID: acp.TerminalID(id), Status: &st}}
}

// timedOut is exited for a command the manager's timeout killed.
func timedOut(id string, st terminal.ExitStatus) step {
	s := exited(id, st)
	s.term.TimedOut = true
	return s
}

func released(id string, st terminal.ExitStatus) step {
	return step{term: &terminal.Event{Kind: terminal.EventReleased, SessionID: "sess_1", TerminalID: acp.TerminalID(id), Status: &st}}
}

func code(n uint32) terminal.ExitStatus { return terminal.ExitStatus{ExitCode: &n} }

func advance(d time.Duration) step { return step{advance: d} }

var tick = step{tick: true}

func diffLines(t *testing.T, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\n  -want %q\n  +got  %q", i+1, wl, gl)
		}
	}
	t.Fatalf("output differs (-want +got); whole output:\n%s", got)
}

// turnScript is a turn in the usual order: a message, a thought, a plan,
// then a command whose terminal is created before the tool call that
// embeds it, whose tool call ends before its exit is in, and a message
// that arrives meanwhile.
var turnScript = []step{
	msg("Let me run "), msg("the tests.\n"),
	thought("they failed\nlast time\n"),
	{update: &acp.Plan{Entries: []acp.PlanEntry{
		{Content: "run the tests", Status: acp.PlanEntryStatusInProgress, Priority: acp.PlanEntryPriorityHigh},
		{Content: "fix them", Status: acp.PlanEntryStatusPending, Priority: acp.PlanEntryPriorityLow},
		{Content: "look around", Status: acp.PlanEntryStatusCompleted, Priority: acp.PlanEntryPriorityMedium},
	}}},
	created("term_1", "go", []string{"test", "./..."}, 1<<20),
	toolCall("call_1", "go test ./...", acp.ToolCallStatusInProgress, "term_1"),
	output("term_1", "ok  \tpkg/a\t0.1s\n--- FAIL: TestB"),
	output("term_1", " (0.00s)\n\x1b[31mFAIL\x1b[0m\tpkg/b\n"),
	advance(1500 * time.Millisecond), tick,
	toolUpdate("call_1", acp.ToolCallStatusFailed, "term_1"),
	msg("The tests fail.\n"),
	advance(50 * time.Millisecond),
	exited("term_1", code(1)),
	released("term_1", code(1)),
}

func TestTextRendererTurn(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now})
	play(r, clock, turnScript)
	r.Finish(acp.StopReasonEndTurn)
	diffLines(t, out.String(), `Let me run the tests.
· they failed
· last time

Plan
  ▸ run the tests (in progress)
  ○ fix them (pending)
  ✓ look around (completed)
▸ go test ./... [execute] (running)
✗ go test ./... [execute]
  │ ok      pkg/a   0.1s
  │ --- FAIL: TestB (0.00s)
  │ FAIL    pkg/b
  └ exit 1 · 1.6s

The tests fail.
`)
}

func TestTextRendererLive(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now, Live: true, Size: func() (int, int) { return 60, 20 }})
	var frames []string
	mark := func() {
		frames = append(frames, out.String())
		out.Reset()
	}
	play(r, clock, []step{created("term_1", "sleep 2", nil, 1<<20)})
	mark()
	play(r, clock, []step{toolCall("call_1", "sleep 2", acp.ToolCallStatusInProgress, "term_1")})
	mark()
	play(r, clock, []step{output("term_1", "a\nb\n")})
	mark()
	play(r, clock, []step{advance(1200 * time.Millisecond), tick})
	mark()
	play(r, clock, []step{tick}) // nothing changed: nothing drawn
	mark()
	play(r, clock, []step{msg("hello\n")})
	mark()
	play(r, clock, []step{toolUpdate("call_1", acp.ToolCallStatusCompleted, "term_1"), exited("term_1", code(0))})
	mark()
	r.Finish(acp.StopReasonEndTurn)
	mark()
	want := []string{
		"",
		"⠋ sleep 2 [execute] 0.0s\n",
		"", // output waits for the next tick
		"\x1b[1A\r\x1b[J⠹ sleep 2 [execute] 1.2s\n  │ a\n  │ b\n",
		"",
		"\x1b[3A\r\x1b[Jhello\n⠹ sleep 2 [execute] 1.2s\n  │ a\n  │ b\n",
		"\x1b[3A\r\x1b[J\n✓ sleep 2 [execute]\n  │ a\n  │ b\n  └ exit 0 · 1.2s\n",
		"",
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Errorf("frame %d:\n  -want %q\n  +got  %q", i, want[i], frames[i])
		}
	}
}

func TestTextRendererLiveLimits(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now, Live: true, LiveLines: 3, Size: func() (int, int) { return 20, 5 }})
	play(r, clock, []step{
		created("term_1", "yes", nil, 1<<20),
		toolCall("call_1", "a very long title that does not fit", acp.ToolCallStatusInProgress, "term_1"),
		output("term_1", "1\n2\n3\n4\n5\n"+strings.Repeat("x", 50)+"\n"),
		advance(time.Second), tick,
	})
	frame := out.String()
	frame = frame[strings.LastIndex(frame, "\x1b[J")+len("\x1b[J"):]
	want := "⠋ a very long… 1.0s\n  │ 4\n  │ 5\n  │ xxxxxxxxxxxxxx…\n"
	if frame != want {
		t.Fatalf("live region %q, want %q", frame, want)
	}
	r.Finish(acp.StopReasonCancelled)
}

func TestTextRendererColor(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now, Color: true})
	play(r, clock, turnScript)
	r.Finish(acp.StopReasonEndTurn)
	for _, want := range []string{"\x1b[2m· they failed\x1b[0m", "\x1b[31m✗\x1b[0m \x1b[1mgo test ./...\x1b[0m", "\x1b[31mexit 1\x1b[0m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%q", want, out.String())
		}
	}
	// Without colour, no escape sequence at all, even from the command's
	// own coloured output.
	out.Reset()
	r = render.NewText(&out, &render.TextOptions{Now: clock.Now})
	play(r, clock, turnScript)
	r.Finish(acp.StopReasonEndTurn)
	if strings.Contains(out.String(), "\x1b") {
		t.Fatalf("escape sequence without colour: %q", out.String())
	}
}

func TestTextRendererEdges(t *testing.T) {
	many := strings.Repeat("line\n", 100)
	tests := []struct {
		name    string
		steps   []step
		reason  acp.StopReason
		want    []string
		notWant []string
	}{
		{
			name: "tail of long output",
			steps: []step{created("t", "seq", nil, 1<<20), toolCall("c", "seq 100", acp.ToolCallStatusInProgress, "t"),
				output("t", many), exited("t", code(0)), toolUpdate("c", acp.ToolCallStatusCompleted, "t")},
			want: []string{"  │ … 80 lines above\n", "  └ exit 0"},
		},
		{
			name: "truncated for the agent",
			steps: []step{created("t", "seq", nil, 4096), toolCall("c", "seq", acp.ToolCallStatusInProgress, "t"),
				output("t", strings.Repeat("0123456789\n", 500)), exited("t", code(0)), toolUpdate("c", acp.ToolCallStatusCompleted, "t")},
			want: []string{"output truncated: the agent saw only the last 4 KiB"},
		},
		{
			name: "output the display missed",
			steps: []step{created("t", "x", nil, 1<<20), toolCall("c", "x", acp.ToolCallStatusInProgress, "t"),
				output("t", "first\npart"),
				{term: &terminal.Event{Kind: terminal.EventOutput, TerminalID: "t", Data: []byte("ial\nlast\n"), Dropped: 2048}},
				exited("t", code(0)), toolUpdate("c", acp.ToolCallStatusCompleted, "t")},
			want: []string{"  │ first\n  │ part …\n  │ ial\n  │ last\n", "2 KiB not shown here"},
		},
		{
			name: "signal and timeout",
			steps: []step{created("t", "sleep 30", nil, 1<<20), toolCall("c", "sleep 30", acp.ToolCallStatusInProgress, "t"),
				advance(3 * time.Second), timedOut("t", terminal.ExitStatus{Signal: acp.Ptr("SIGTERM")}), toolUpdate("c", acp.ToolCallStatusFailed, "t")},
			want: []string{"✗ sleep 30 [execute]\n  └ timed out, killed by SIGTERM · 3.0s\n"},
		},
		{
			name: "cancelled while running",
			steps: []step{created("t", "sleep 30", nil, 1<<20), toolCall("c", "sleep 30", acp.ToolCallStatusInProgress, "t"),
				advance(time.Second)},
			reason: acp.StopReasonCancelled,
			want:   []string{"⊘ sleep 30 [execute] (cancelled)\n  └ still running · 1.0s\n", "⊘ turn cancelled\n"},
		},
		{
			name: "a finished tool call waits for its exit, boundedly",
			steps: []step{created("t", "x", nil, 1<<20), toolCall("c", "x", acp.ToolCallStatusInProgress, "t"),
				toolUpdate("c", acp.ToolCallStatusCompleted, "t"), msg("after\n"),
				advance(2 * time.Second), tick, msg("later\n")},
			want: []string{"✓ x [execute]\n  └ still running · 2.0s\n\nafter\nlater\n"},
		},
		{
			name: "terminal created after its tool call",
			steps: []step{toolCall("c", "late", acp.ToolCallStatusInProgress, "t"), created("t", "late", nil, 1<<20),
				output("t", "out\n"), toolUpdate("c", acp.ToolCallStatusCompleted, "t"), exited("t", code(0))},
			want:    []string{"✓ late [execute]\n  │ out\n  └ exit 0"},
			notWant: []string{"$ late"},
		},
		{
			name:  "terminal no tool call shows",
			steps: []step{created("t", "make", []string{"all", "x y"}, 1<<20), output("t", "built\n"), exited("t", code(2))},
			want:  []string{"$ make all 'x y'\n  │ built\n  └ exit 2"},
		},
		{
			name: "tool call without terminal",
			steps: []step{{update: &acp.ToolCall{ToolCallID: "c", Title: "read main.go", Kind: acp.ToolKindRead, Status: acp.ToolCallStatusCompleted,
				Content: []acp.ToolCallContent{&acp.Content{Content: &acp.TextContent{Text: "package main\n"}}, &acp.Diff{Path: "/w/main.go", NewText: "x"}}}}},
			want: []string{"✓ read main.go [read]\n  │ package main\n  │ edit /w/main.go\n"},
		},
		{
			// RunCommand's text for clients without terminals: the
			// terminal's own tail is shown instead, once.
			name: "output as text beside a terminal acpterm ran",
			steps: []step{created("t", "echo hi", nil, 1<<20), toolCall("c", "echo hi", acp.ToolCallStatusInProgress, "t"),
				output("t", "hi\n"), exited("t", code(0)),
				{update: &acp.ToolCallUpdate{ToolCallID: "c", Status: acp.Ptr(acp.ToolCallStatusCompleted), Content: []acp.ToolCallContent{
					acp.TerminalContent("t"), acp.TextToolCallContent("```\nhi\n```\nexit 0")}}}},
			want:    []string{"✓ echo hi [execute]\n  │ hi\n  └ exit 0 · "},
			notWant: []string{"```", "│ exit 0"},
		},
		{
			name: "text beside a terminal acpterm did not run",
			steps: []step{{update: &acp.ToolCall{ToolCallID: "c", Title: "remote", Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusCompleted,
				Content: []acp.ToolCallContent{acp.TerminalContent("elsewhere"), acp.TextToolCallContent("done")}}}},
			want: []string{"✓ remote [execute]\n  │ done\n"},
		},
		{
			name: "permissions",
			steps: []step{
				{perm: &render.PermissionEvent{Title: "edit", Decision: "allow_once"}},
				{perm: &render.PermissionEvent{Title: "rm", TerminalCommand: "rm -rf /", Decision: "reject_once", Reason: "no TTY to ask on"}},
				{perm: &render.PermissionEvent{Title: "push", Decision: "cancelled"}},
			},
			want:    []string{"✗ permission denied: run rm -rf / (no TTY to ask on)\n⊘ permission cancelled: push\n"},
			notWant: []string{"edit"},
		},
		{name: "refusal", reason: acp.StopReasonRefusal, want: []string{"stop reason: refusal"}},
		{name: "max tokens", reason: acp.StopReasonMaxTokens, want: []string{"stop reason: max_tokens"}},
		{
			name:  "partial message line is ended",
			steps: []step{msg("no newline"), thought("thinking")},
			want:  []string{"no newline\n· thinking\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := rendertest.NewClock()
			var out bytes.Buffer
			r := render.NewText(&out, &render.TextOptions{Now: clock.Now})
			play(r, clock, tt.steps)
			reason := tt.reason
			if reason == "" {
				reason = acp.StopReasonEndTurn
			}
			r.Finish(reason)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestTextRendererSuspend: nothing is drawn while suspended, and the live
// region is cleared first.
func TestTextRendererSuspend(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Now: clock.Now, Live: true})
	play(r, clock, []step{created("t", "x", nil, 1<<20), toolCall("c", "x", acp.ToolCallStatusInProgress, "t")})
	out.Reset()
	resume := r.Suspend()
	if out.String() != "\x1b[1A\r\x1b[J" {
		t.Fatalf("suspend wrote %q", out.String())
	}
	out.Reset()
	play(r, clock, []step{msg("held\n"), advance(time.Second), tick})
	if out.Len() != 0 {
		t.Fatalf("drew while suspended: %q", out.String())
	}
	resume()
	resume() // idempotent
	if got := out.String(); got != "held\n⠋ x [execute] 1.0s\n" {
		t.Fatalf("resume drew %q", got)
	}
	r.Finish(acp.StopReasonEndTurn)
}

func TestJSONRenderer(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewJSON(&out, clock.Now)
	play(r, clock, []step{
		{perm: &render.PermissionEvent{SessionID: "sess_1", Title: "sh -c 'echo hi'", TerminalCommand: "sh -c 'echo hi'", Decision: "allow_once", Reason: "--approve-all"}},
		created("term_1", "sh", []string{"-c", "echo hi"}, 4096),
		toolCall("call_1", "echo hi", acp.ToolCallStatusInProgress, "term_1"),
		output("term_1", "hi\n\xe2\x82"), // the euro sign, cut in two
		output("term_1", "\xac \xff\n"),
		{term: &terminal.Event{Kind: terminal.EventOutput, TerminalID: "term_1", Data: []byte("z"), Dropped: 7}},
		advance(1234 * time.Millisecond),
		exited("term_1", code(0)),
		released("term_1", code(0)),
		{perm: &render.PermissionEvent{SessionID: "sess_1", ToolCallID: "call_2", Title: "edit", Decision: "reject_once", OptionID: "no"}},
		msg("done"),
	})
	r.Finish(acp.StopReasonEndTurn)
	r.Error("not shown by a finished run", 3)
	want := `{"event":"permission","sessionId":"sess_1","title":"sh -c 'echo hi'","decision":"allow_once","terminalCommand":"sh -c 'echo hi'","reason":"--approve-all"}
{"event":"terminal_created","sessionId":"sess_1","terminalId":"term_1","command":"sh","args":["-c","echo hi"],"cwd":"/work","pid":4242,"outputByteLimit":4096}
{"event":"session_update","sessionId":"sess_1","update":{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"echo hi","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"term_1"}]}}
{"event":"terminal_output","terminalId":"term_1","data":"hi\n"}
{"event":"terminal_output","terminalId":"term_1","data":"€ �\n"}
{"event":"terminal_output","terminalId":"term_1","data":"z","dropped":7}
{"event":"terminal_exit","terminalId":"term_1","exitCode":0,"signal":null,"timedOut":false,"durationMs":1234}
{"event":"permission","sessionId":"sess_1","toolCallId":"call_2","title":"edit","decision":"reject_once","optionId":"no"}
{"event":"session_update","sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}}
{"event":"stop","stopReason":"end_turn"}
{"event":"error","message":"not shown by a finished run","exitCode":3}
`
	diffLines(t, out.String(), want)
	// Every line is one JSON object with an "event".
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct{ Event string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event == "" {
			t.Errorf("line %q: %v", line, err)
		}
	}
}

func TestJSONRendererSignal(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewJSON(&out, clock.Now)
	play(r, clock, []step{created("t", "sleep", []string{"30"}, 1), timedOut("t", terminal.ExitStatus{Signal: acp.Ptr("SIGKILL")})})
	if !strings.Contains(out.String(), `{"event":"terminal_exit","terminalId":"t","exitCode":null,"signal":"SIGKILL","timedOut":true,"durationMs":0}`) {
		t.Fatalf("got %s", out.String())
	}
}

// The JSON renderer writes a session/update as received: verbatim when the
// raw params are at hand (whitespace compacted, DEL/C1 escaped), else the
// decoded update encoded again.
func TestJSONSessionUpdateVerbatim(t *testing.T) {
	n := &acp.SessionNotification{SessionID: "s1", Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hi\u0085"}}}
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"verbatim", `{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"text":"hi` + "\u0085" + `","type":"text"},"x":1}}`,
			`{"event":"session_update","sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"text":"hi\u0085","type":"text"},"x":1}}` + "\n"},
		{"whitespace", "{\"sessionId\":\"s1\",\"update\":{\t\"sessionUpdate\":\"agent_message_chunk\",\r\"content\":{\"type\":\"text\",\"text\":\"hi\"}}}",
			`{"event":"session_update","sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}` + "\n"},
		{"no raw", "",
			`{"event":"session_update","sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi\u0085"}}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := render.NewJSON(&out, nil)
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			r.SessionUpdate(n, raw)
			if got := out.String(); got != tt.want {
				t.Errorf("(-want +got):\n-%s+%s", tt.want, got)
			}
		})
	}
}
