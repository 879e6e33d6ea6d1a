package render_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
)

// sessionLine is the line the text renderer shows for in.
func sessionLine(in render.SessionInfo) string {
	var out bytes.Buffer
	render.NewText(&out, nil).(render.SessionRenderer).ShowSession(in)
	return strings.TrimSuffix(out.String(), "\n")
}

// TestSessionLine: the mode and model, the agent's names beside its IDs
// when they differ, its text made harmless; a composite model ID (qwen's
// internal keys) is shown by the model's name alone, else by its last
// part.
func TestSessionLine(t *testing.T) {
	for _, tc := range []struct {
		in   render.SessionInfo
		want string
	}{
		{render.SessionInfo{}, ""},
		{render.SessionInfo{Mode: "yolo", ModeName: "YOLO", Model: "b", ModelName: "Big Pickle"}, "mode yolo · model b (Big Pickle)"},
		{render.SessionInfo{Model: "$runtime|openai|mock-model(openai)", ModelName: "mock-model"}, "model mock-model"},
		{render.SessionInfo{Model: "$runtime|openai|gpt-x"}, "model gpt-x"},
		{render.SessionInfo{Model: "a|b|\x1b[31m"}, `model \x1b[31m`},
		{render.SessionInfo{Model: "opencode/grok-code", ModelName: "Grok Code"}, "model opencode/grok-code (Grok Code)"},
		{render.SessionInfo{Model: "|||"}, "model |||"},
	} {
		if got := sessionLine(tc.in); got != tc.want {
			t.Errorf("session line of %+v = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWaitingLine: the live region says that acpterm waits for the agent
// once it has been silent for 2s during the turn, counts the
// seconds, and drops the line as soon as the agent speaks.
func TestWaitingLine(t *testing.T) {
	clock := rendertest.NewClock()
	var out bytes.Buffer
	r := render.NewText(&out, &render.TextOptions{Live: true, Now: clock.Now})
	clock.Advance(10 * time.Second)
	r.Tick()
	if strings.Contains(out.String(), "waiting") {
		t.Fatalf("a waiting line before the turn: %q", out.String())
	}
	r.(render.SessionRenderer).StartTurn("gemini")
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
	r := render.NewText(&out, nil)
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
