package client

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

func TestMatchChoice(t *testing.T) {
	cs := []choice{{"default", "Default"}, {"autoEdit", "Auto Edit"}, {"yolo", "YOLO"}, {"Plan", "plan mode"}, {"plan", "Plan"}}
	for _, tc := range []struct {
		want, id string
		ok       bool
	}{
		{"yolo", "yolo", true},
		{"YOLO", "yolo", true},          // the name, or the ID ignoring case
		{"auto edit", "autoEdit", true}, // the name ignoring case
		{"autoedit", "autoEdit", true},
		{"Plan", "Plan", true}, // an exact ID wins over a case-insensitive one
		{"PLAN", "", false},    // two choices match ignoring case
		{"turbo", "", false},
		{"", "", false},
	} {
		id, ok := matchChoice(tc.want, cs)
		if id != tc.id || ok != tc.ok {
			t.Errorf("matchChoice(%q) = %q, %v; want %q, %v", tc.want, id, ok, tc.id, tc.ok)
		}
	}
}

func TestConfigValue(t *testing.T) {
	model := &acp.SessionConfigOption{ID: "model", Name: "Model", Kind: &acp.SessionConfigSelect{
		CurrentValue: "a",
		Options: acp.SessionConfigSelectGroupList{
			{Group: "free", Name: "Free", Options: []acp.SessionConfigSelectOption{{Value: "a", Name: "Alpha"}}},
			{Group: "paid", Name: "Paid", Options: []acp.SessionConfigSelectOption{{Value: "b", Name: "Beta"}}},
		},
	}}
	v, msg := configValue(model, "--model", "beta")
	if sv, ok := v.(*acp.SessionConfigSelectValue); !ok || sv.Value != "b" || msg != "" {
		t.Fatalf("beta: %#v, %q", v, msg)
	}
	if v, msg := configValue(model, "--model", "gamma"); v != nil || !strings.Contains(msg, "it offers a, b") {
		t.Fatalf("gamma: %#v, %q", v, msg)
	}
	toggle := &acp.SessionConfigOption{ID: "fast", Name: "Fast", Kind: &acp.SessionConfigBoolean{}}
	if v, _ := configValue(toggle, "--set", "TRUE"); v == nil || !v.(*acp.SessionConfigBooleanValue).Value {
		t.Fatalf("boolean: %#v", v)
	}
	if v, msg := configValue(toggle, "--set", "yes"); v != nil || !strings.Contains(msg, "it offers true, false") {
		t.Fatalf("boolean yes: %#v, %q", v, msg)
	}
}

func TestListChoicesBounded(t *testing.T) {
	var cs []choice
	for i := 0; i < 100; i++ {
		cs = append(cs, choice{id: "m\x1b[2J" + strings.Repeat("x", 200)})
	}
	s := listChoices(cs)
	if strings.Contains(s, "\x1b") || !strings.HasSuffix(s, "… and 60 more") || len(s) > maxListed*100 {
		t.Fatalf("listChoices: %d bytes, %q…", len(s), s[:100])
	}
}

func TestSessionStateInfo(t *testing.T) {
	cat := acp.SessionConfigOptionCategoryModel
	st := sessionState{sid: "s", modes: &acp.SessionModeState{CurrentModeID: "yolo", AvailableModes: []acp.SessionMode{{ID: "yolo", Name: "YOLO"}}},
		options: []acp.SessionConfigOption{{ID: "model", Category: &cat, Kind: &acp.SessionConfigSelect{CurrentValue: "b",
			Options: acp.SessionConfigSelectOptionList{{Value: "b", Name: "Big Pickle"}}}}}}
	in := st.info()
	if in != (SessionInfo{SessionID: "s", Mode: "yolo", ModeName: "YOLO", Model: "b", ModelName: "Big Pickle"}) {
		t.Fatalf("info %+v", in)
	}
	if got := sessionLine(in); got != "mode yolo · model b (Big Pickle)" {
		t.Fatalf("sessionLine %q", got)
	}
}

func TestErrorDataText(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{``, ``},
		{`null`, ``},
		{`"plain \u001b[31mred"`, `; data: plain \x1b[31mred`},
		{`{ "details" : "Query closed before response received" }`, `; data: {"details":"Query closed before response received"}`},
	} {
		if got := errorDataText(json.RawMessage(tc.data)); got != tc.want {
			t.Errorf("errorDataText(%s) = %q, want %q", tc.data, got, tc.want)
		}
	}
	long, _ := json.Marshal(strings.Repeat("é", 400))
	if got := errorDataText(long); len(got) > len("; data: ")+maxErrorData+len("…") || !strings.HasSuffix(got, "é…") {
		t.Fatalf("long data: %d bytes: %q", len(got), got)
	}
}

// TestWaitingLine: the live region says that acpterm waits for the agent
// once it has been silent for waitingAfter during the turn, counts the
// seconds, and drops the line as soon as the agent speaks.
func TestWaitingLine(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	r := NewTextRenderer(&out, &TextOptions{Live: true, Now: clock.Now}).(*textRenderer)
	clock.Advance(10 * time.Second)
	r.Tick()
	if strings.Contains(out.String(), "waiting") {
		t.Fatalf("a waiting line before the turn: %q", out.String())
	}
	r.StartTurn("gemini")
	clock.Advance(time.Second)
	r.Tick()
	if strings.Contains(out.String(), "waiting") {
		t.Fatalf("a waiting line after 1s: %q", out.String())
	}
	clock.Advance(11 * time.Second)
	r.Tick()
	if !strings.Contains(out.String(), "waiting for gemini · 12s\n") {
		t.Fatalf("no waiting line after 12s: %q", out.String())
	}
	out.Reset()
	r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hi\n"}}}, nil)
	if got := out.String(); !strings.HasPrefix(got, "\x1b[1A\r\x1b[J") || strings.Contains(got, "waiting") {
		t.Fatalf("the waiting line stayed after the agent spoke: %q", got)
	}
	clock.Advance(65 * time.Second)
	r.Tick()
	if !strings.Contains(out.String(), "waiting for gemini · 1m05s") {
		t.Fatalf("no minutes: %q", out.String())
	}
	out.Reset()
	r.Finish(acp.StopReasonEndTurn)
	if strings.Contains(out.String(), "waiting") || !strings.Contains(out.String(), "\x1b[J") {
		t.Fatalf("the waiting line stayed after the turn: %q", out.String())
	}
}

// TestUsageAndCommandsShown: the slash commands are shown once, bounded;
// the last usage at the end of the turn.
func TestUsageAndCommandsShown(t *testing.T) {
	var out bytes.Buffer
	r := NewTextRenderer(&out, nil)
	var cmds []acp.AvailableCommand
	for i := 0; i < 50; i++ {
		cmds = append(cmds, acp.AvailableCommand{Name: "c" + strings.Repeat("x", 100)})
	}
	send := func(u acp.SessionUpdate) { r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: u}, nil) }
	send(&acp.AvailableCommandsUpdate{AvailableCommands: cmds})
	send(&acp.AvailableCommandsUpdate{AvailableCommands: cmds[:1]})
	send(&acp.UsageUpdate{Used: 1, Size: 2})
	send(&acp.UsageUpdate{Used: 12345, Size: 1000000, Cost: &acp.Cost{Amount: 1.5, Currency: "USD"}})
	r.Finish(acp.StopReasonEndTurn)
	got := out.String()
	if strings.Count(got, "commands:") != 1 || !strings.Contains(got, "… +20 more\n") {
		t.Fatalf("commands: %q", got)
	}
	if line := got[strings.Index(got, "commands:"):]; len(line) > 2000 {
		t.Fatalf("commands line of %d bytes", len(line))
	}
	if !strings.HasSuffix(got, "context: 12,345 / 1,000,000 tokens · cost 1.5 USD\n") || strings.Count(got, "context:") != 1 {
		t.Fatalf("usage: %q", got)
	}
}
