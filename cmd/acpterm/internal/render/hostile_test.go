package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// What an agent sends reaches the screen with its escapes made visible,
// and costs what it costs however much of it comes.

const evil = rendertest.Evil

// evilTurn is a turn in which every string the agent controls is evil.
func evilTurn() []step {
	kind := acp.ToolKind("execute" + evil)
	title := "title" + evil
	return []step{
		msg("message" + evil + "\nsecond line\r\n"),
		thought("thought" + evil + "\n"),
		{update: &acp.Plan{Entries: []acp.PlanEntry{
			{Content: "plan" + evil, Status: acp.PlanEntryStatusInProgress},
			{Content: "plan2" + evil, Status: acp.PlanEntryStatus("odd" + evil)},
		}}},
		created("term_1", "echo"+evil, []string{"arg" + evil}, 1<<20),
		created("term_2", "line"+evil, nil, 1<<20), // a shell line, never embedded
		{update: &acp.ToolCall{ToolCallID: acp.ToolCallID("id" + evil), Title: title, Kind: kind, Status: acp.ToolCallStatusInProgress,
			Content: []acp.ToolCallContent{
				&acp.Terminal{TerminalID: "term_1"},
				&acp.Diff{Path: "/path" + evil, NewText: "x"},
			}}},
		// Text is shown under a tool call without a terminal acpterm ran
		// (beside one, the terminal's tail is shown instead).
		{update: &acp.ToolCall{ToolCallID: acp.ToolCallID("id2" + evil), Status: acp.ToolCallStatusInProgress,
			Content: []acp.ToolCallContent{
				&acp.Content{Content: &acp.TextContent{Text: "content" + evil + "\nmore"}},
				&acp.Content{Content: &acp.ResourceLink{Name: "link" + evil, URI: "file:///" + evil}},
			}}},
		output("term_1", "output"+evil+"\n"),
		output("term_2", "output2"+evil+"\n"),
		advance(2 * time.Second), tick,
		{update: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID("id" + evil), Title: &title}},
		exited("term_1", terminal.ExitStatus{Signal: acp.Ptr("SIG" + evil)}),
		{perm: &render.PermissionEvent{Title: "perm" + evil, TerminalCommand: "cmd" + evil, Decision: "reject_once", Reason: "why" + evil}},
		{perm: &render.PermissionEvent{Title: "perm" + evil, Decision: "cancelled"}},
		{update: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID("id" + evil), Status: acp.Ptr(acp.ToolCallStatusCompleted)}},
		advance(3 * time.Second), tick,
	}
}

// TestTextRendererHostile: whatever the agent sends, the only escape
// sequences on the screen are the renderer's own, in every mode.
func TestTextRendererHostile(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    render.TextOptions
	}{
		{"plain", render.TextOptions{}},
		{"color", render.TextOptions{Color: true}},
		{"live", render.TextOptions{Color: true, Live: true, Size: func() (int, int) { return 300, 40 }}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := rendertest.NewClock()
			var out bytes.Buffer
			o := tt.o
			o.Now = clock.Now
			r := render.NewText(&out, &o)
			play(r, clock, evilTurn())
			r.Finish(acp.StopReason("odd" + evil))
			got := out.String()
			if off := rendertest.ScreenOffence(got); off != "" {
				t.Fatalf("%s reached the screen:\n%q", off, got)
			}
			if !tt.o.Color && strings.Contains(got, "\x1b") {
				t.Fatalf("ESC without colour:\n%q", got)
			}
			// The agent's text is there, its escapes made visible.
			visible := `<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>"
			plain := rendertest.Plain(got)
			for _, want := range []string{
				"message" + visible + "\nsecond line\n", "· thought" + visible, "plan" + visible, "plan2" + visible,
				"title" + visible + " [execute" + visible + "]", "content" + visible, "│ more", "[link" + visible,
				"edit /path" + visible, "$ line" + visible, "killed by SIG" + visible,
				"permission denied: run cmd" + visible, "(why" + visible + ")", "permission cancelled: perm" + visible,
				"turn ended: odd" + visible, "id2" + visible,
				"│ X2KRLO\uFFFD>", // command output: escapes dropped, after the last CR
			} {
				if !strings.Contains(plain, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if t.Failed() {
				t.Fatalf("output:\n%s", plain)
			}
		})
	}
}

// TestJSONRendererHostile: the JSON output keeps the agent's strings
// exactly, with DEL, C1 and bidi characters escaped like C0 ones.
func TestJSONRendererHostile(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewJSON(&out, clock.Now)
	play(r, clock, evilTurn())
	r.Finish(acp.StopReasonEndTurn)
	r.Error("error"+evil, 3)
	got := out.String()
	if off := rendertest.ScreenOffence(got); off != "" {
		t.Fatalf("%s in the JSON output:\n%s", off, got)
	}
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		var ev any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		texts = appendStrings(texts, ev)
	}
	want := strings.ToValidUTF8(evil, "\uFFFD")
	for _, w := range []string{"message" + want + "\nsecond line\r\n", "error" + want, "title" + want, "/path" + want, "cmd" + want} {
		if !slices.Contains(texts, w) {
			t.Errorf("no string of the output decodes to %q", w)
		}
	}
}

// appendStrings appends every string in a decoded JSON value.
func appendStrings(to []string, v any) []string {
	switch v := v.(type) {
	case string:
		to = append(to, v)
	case []any:
		for _, x := range v {
			to = appendStrings(to, x)
		}
	case map[string]any:
		for _, x := range v {
			to = appendStrings(to, x)
		}
	}
	return to
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
	r := render.NewJSON(&out, nil)
	r.SessionUpdate(&n, raw)
	got := out.String()
	if off := rendertest.ScreenOffence(got); off != "" {
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
func runningTools(o render.TextOptions, n int) (render.Renderer, *rendertest.Clock) {
	clock := rendertest.NewClock()
	o.Now = clock.Now
	r := render.NewText(io.Discard, &o)
	for i := range n {
		r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCall{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", i)),
			Title: "t", Status: acp.ToolCallStatusInProgress}}, nil)
	}
	return r, clock
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
			r, clock := runningTools(render.TextOptions{Live: true, Size: func() (int, int) { return 100, 30 }}, n)
			defer r.Finish(acp.StopReasonEndTurn)
			return rendertest.AllocatedBy(func() {
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
		r, _ := runningTools(render.TextOptions{}, many)
		defer r.Finish(acp.StopReasonEndTurn)
		done := acp.ToolCallStatusCompleted
		n := rendertest.AllocatedBy(func() {
			for i := range many {
				r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(fmt.Sprint("call_", i)), Status: &done}}, nil)
			}
		})
		if n > many*4<<10 {
			t.Fatalf("ending %d tool calls allocated %d MiB", many, n>>20)
		}
	})
}
