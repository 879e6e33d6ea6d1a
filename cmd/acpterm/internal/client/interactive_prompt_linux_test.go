//go:build linux

package client

import (
	"io"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
)

// TestPromptRedrawnAfterLateOutput: on a real pseudo-terminal, the agent's
// available_commands_update arriving after the prompt line is drawn (as
// claude's and omp's do) is printed above it, and the prompt and the text
// typed so far are drawn again below, at the right column; a log line on
// stderr (written between Suspend and its resume) does the same. The line
// read is what was typed.
func TestPromptRedrawnAfterLateOutput(t *testing.T) {
	ptmx, tty, screen, copied := openScreenPTY(t)
	defer ptmx.Close()
	p := permission.NewPrompter(tty, tty, nil, nil)
	stop := make(chan struct{})
	defer func() {
		close(stop)
		p.Close() // closes tty
		ptmx.Close()
		<-copied
	}()
	sw := newSwitchRenderer(&Config{Stdout: tty, Interactive: true, Format: FormatText})
	if sw.screen == nil {
		t.Fatal("a terminal on stdout was not taken for the prompt's screen")
	}
	ed := newLineEditor(p, tty, stop)
	ed.setWidth(80, 24)
	sw.promptAware(ed)
	type result struct {
		line string
		err  error
	}
	read := make(chan result, 1)
	go func() {
		line, err := ed.readLine(promptLine, nil)
		read <- result{line, err}
	}()
	screen.expect(t, promptLine)
	if _, err := io.WriteString(ptmx, "abc"); err != nil {
		t.Fatal(err)
	}
	screen.expect(t, "abc")

	// claude's slash commands, after the prompt is drawn.
	raw := `{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"review","description":"Review changes","input":null}]}}`
	var n acp.SessionNotification
	if err := n.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	sw.SessionUpdate(&n, []byte(raw))
	screen.expect(t, "\x1b[Kcommands: /review\r\n"+promptLine+"abc")

	// A line on stderr, as writeStderr writes it.
	show := sw.Suspend()
	if _, err := io.WriteString(tty, "agent: a log line\r\n"); err != nil {
		t.Fatal(err)
	}
	show()
	screen.expect(t, "\r\x1b[Kagent: a log line\r\n")
	screen.expect(t, promptLine+"abc")

	if _, err := io.WriteString(ptmx, "d\r"); err != nil {
		t.Fatal(err)
	}
	if r := <-read; r.err != nil || r.line != "abcd" {
		t.Fatalf("read %q, %v; want \"abcd\"", r.line, r.err)
	}
}
