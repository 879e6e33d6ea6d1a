package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
)

// TestTextNotice: a notice (v2 agents send their warnings so, where v1
// ones sent a message) is shown on one line in order with the messages,
// its description after its title, sanitized.
func TestTextNotice(t *testing.T) {
	var out bytes.Buffer
	r := NewText(&out, &TextOptions{Now: rendertest.NewClock().Now})
	say := func(u acp.SessionUpdate) { r.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: u}, nil) }
	desc := "auto mode is billed\nas before\x1b[2J"
	say(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "before\n"}})
	say(&acp.Notice{Severity: acp.NoticeSeverityWarning, Title: "Claude reported a warning", Description: &desc})
	say(&acp.Notice{Severity: acp.NoticeSeverityInfo, Title: "compacted"})
	say(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "after\n"}})
	r.Finish(acp.StopReasonEndTurn)
	got := out.String()
	want := []string{"before\n", "⚠ Claude reported a warning: auto mode is billed as before", "ℹ compacted\n", "after\n"}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q in order:\n%q", w, got)
		}
		at += i + len(w)
	}
	if strings.Contains(got, "\x1b") {
		t.Fatalf("an escape sequence was shown: %q", got)
	}
}
