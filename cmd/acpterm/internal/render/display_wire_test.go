package render_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
)

// A wire file (testdata/display/*.wire) holds the session/update params
// a real agent sends for its own commands, one per line, as recorded
// (ACP-NOTES §12), and what acpterm shows of them: sections "-- wire --",
// "-- text --" and "-- json --", after comment lines starting with "#".

// replayWire passes the wire's updates through the display adapter to r,
// 100ms apart on clock, then ends the turn 100ms after the last.
func replayWire(t *testing.T, wire string, r render.Renderer, clock *rendertest.Clock) {
	t.Helper()
	d := render.NewDisplayTerminals(r)
	for i, line := range strings.Split(strings.TrimSpace(wire), "\n") {
		if i > 0 {
			clock.Advance(100 * time.Millisecond)
		}
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatalf("wire line %d: %v", i+1, err)
		}
		d.SessionUpdate(&n, json.RawMessage(line))
	}
	clock.Advance(100 * time.Millisecond)
	r.Finish(acp.StopReasonEndTurn)
}

// TestDisplayWire: what real agents send for the commands they run
// themselves is shown under the tool call, in text and JSON: codex's
// output that only rawOutput carries, claude's failed call (its error,
// "failed", never "still running") and the command it names only after
// announcing the terminal, a terminal left unfinished at end_turn, and
// JetBrains' terminal_output_delta chunks.
func TestDisplayWire(t *testing.T) {
	files, err := filepath.Glob("testdata/display/*.wire")
	if err != nil || len(files) == 0 {
		t.Fatalf("no wire files: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".wire"), func(t *testing.T) {
			w := rendertest.ReadWire(t, path)
			var text bytes.Buffer
			clock := rendertest.NewClock()
			replayWire(t, w["wire"], render.NewText(&text, &render.TextOptions{Now: clock.Now}), clock)
			if got := text.String(); got != w["text"] {
				t.Errorf("text:\n%s\nwant:\n%s", got, w["text"])
			}
			if strings.Contains(text.String(), "still running") {
				t.Errorf("text reads \"still running\":\n%s", text.String())
			}
			var js bytes.Buffer
			clock = rendertest.NewClock()
			replayWire(t, w["wire"], render.NewJSON(&js, clock.Now), clock)
			if got := js.String(); got != w["json"] {
				t.Errorf("json:\n%s\nwant:\n%s", got, w["json"])
			}
		})
	}
}
