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

// TestWhere: a terminal that ran on another machine says where, in the
// text's last line of its terminal and in JSON's terminal_created; one
// that ran here says nothing of it.
func TestWhere(t *testing.T) {
	remote := created("term_r", "make", []string{"test"}, 1<<20)
	remote.term.Info.Where = "ssh://devbox"
	script := []step{
		remote,
		toolCall("call_r", "make test", acp.ToolCallStatusInProgress, "term_r"),
		output("term_r", "ok\n"),
		advance(20 * time.Millisecond),
		exited("term_r", code(0)),
		toolUpdate("call_r", acp.ToolCallStatusCompleted, "term_r"),
		created("term_l", "true", nil, 1<<20),
		toolCall("call_l", "true", acp.ToolCallStatusInProgress, "term_l"),
		exited("term_l", code(0)),
		toolUpdate("call_l", acp.ToolCallStatusCompleted, "term_l"),
	}

	clock := rendertest.NewClock()
	var text bytes.Buffer
	tr := render.NewText(&text, &render.TextOptions{Now: clock.Now})
	play(tr, clock, script)
	tr.Finish(acp.StopReasonEndTurn)
	if !strings.Contains(text.String(), "  │ ok\n  └ exit 0 · 20ms · on ssh://devbox\n") {
		t.Errorf("text does not say where make ran:\n%s", &text)
	}
	if strings.Count(text.String(), " · on ") != 1 {
		t.Errorf("text says where a local command ran:\n%s", &text)
	}

	clock = rendertest.NewClock()
	var js bytes.Buffer
	jr := render.NewJSON(&js, clock.Now)
	play(jr, clock, script)
	jr.Finish(acp.StopReasonEndTurn)
	for _, want := range []string{
		`{"event":"terminal_created","sessionId":"sess_1","terminalId":"term_r","command":"make","args":["test"],"cwd":"/work","pid":4242,"where":"ssh://devbox","outputByteLimit":1048576}`,
		`{"event":"terminal_created","sessionId":"sess_1","terminalId":"term_l","command":"true","args":[],"cwd":"/work","pid":4242,"outputByteLimit":1048576}`,
	} {
		if !strings.Contains(js.String(), want+"\n") {
			t.Errorf("JSON lacks %s:\n%s", want, &js)
		}
	}
}
