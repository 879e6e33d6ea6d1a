package render_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// TestLost: a terminal whose end the host never heard (terminal.Event.Lost)
// ends failed, with the reason in place of an exit status and its time
// stopped there, in text and in JSON's terminal_exit; not "still running".
func TestLost(t *testing.T) {
	const why = "the connection to ssh://devbox was lost and the target killed the command"
	lost := func(kind terminal.EventKind) step {
		return step{term: &terminal.Event{Kind: kind, SessionID: "sess_1", TerminalID: "term_r", Lost: why}}
	}
	c := created("term_r", "sleep", []string{"100"}, 1<<20)
	c.term.Info.Where = "ssh://devbox"
	script := []step{
		c,
		toolCall("call_r", "sleep 100", acp.ToolCallStatusInProgress, "term_r"),
		output("term_r", "up\n"),
		advance(30 * time.Millisecond),
		lost(terminal.EventExited),
		lost(terminal.EventReleased),
		advance(time.Second),
		toolUpdate("call_r", acp.ToolCallStatusFailed, "term_r"),
	}

	clock := rendertest.NewClock()
	var text bytes.Buffer
	tr := render.NewText(&text, &render.TextOptions{Now: clock.Now})
	play(tr, clock, script)
	tr.Finish(acp.StopReasonEndTurn)
	if !strings.Contains(text.String(), "  │ up\n  └ "+why+" · 30ms · on ssh://devbox\n") || strings.Contains(text.String(), "still running") {
		t.Errorf("text does not end the terminal with why:\n%s", &text)
	}

	clock = rendertest.NewClock()
	var js bytes.Buffer
	jr := render.NewJSON(&js, clock.Now)
	play(jr, clock, script)
	jr.Finish(acp.StopReasonEndTurn)
	want := `{"event":"terminal_exit","terminalId":"term_r","exitCode":null,"signal":null,"timedOut":false,"lost":"` + why + `","durationMs":30}`
	if !strings.Contains(js.String(), want+"\n") {
		t.Errorf("JSON lacks %s:\n%s", want, &js)
	}
}
