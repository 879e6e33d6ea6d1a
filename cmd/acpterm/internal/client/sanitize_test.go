package client

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// evil carries every kind of escape an agent may try on the screen: OSC 52
// (clipboard), OSC 0 (title), cursor up and erase line, CR, NUL, BEL, a C1
// CSI, a bidi override, DCS, DEL and invalid UTF-8.
const evil = "<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\\x7f\xff>"

// ownEscape is every escape sequence the text renderer writes itself: SGR
// (style.go) and the live region's cursor-up, CR, erase-below.
var ownEscape = regexp.MustCompile(`\x1b\[[0-9;]*m|\x1b\[[0-9]+A\r\x1b\[J`)

// screenOffence returns the first thing in out that a terminal would act
// on and that acpterm did not mean to write, or "" if there is none.
func screenOffence(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	rest := ownEscape.ReplaceAllString(out, "")
	for _, r := range rest {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			return "control " + strings.TrimPrefix(strings.TrimSuffix(jsonQuote(string(r)), `"`), `"`)
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return "bidi control " + jsonQuote(string(r))
		}
	}
	return ""
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

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
		{perm: &PermissionEvent{Title: "perm" + evil, TerminalCommand: "cmd" + evil, Decision: "reject_once", Reason: "why" + evil}},
		{perm: &PermissionEvent{Title: "perm" + evil, Decision: "cancelled"}},
		{update: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID("id" + evil), Status: ptr(acp.ToolCallStatusCompleted)}},
		advance(3 * time.Second), tick,
	}
}

// TestTextRendererHostile: whatever the agent sends, the only escape
// sequences on the screen are the renderer's own, in every mode.
func TestTextRendererHostile(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    TextOptions
	}{
		{"plain", TextOptions{}},
		{"color", TextOptions{Color: true}},
		{"live", TextOptions{Color: true, Live: true, Size: func() (int, int) { return 300, 40 }}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			var out bytes.Buffer
			o := tt.o
			o.Now = clock.Now
			r := NewTextRenderer(&out, &o)
			play(r, clock, evilTurn())
			r.Finish(acp.StopReason("odd" + evil))
			got := out.String()
			if off := screenOffence(got); off != "" {
				t.Fatalf("%s reached the screen:\n%q", off, got)
			}
			if !tt.o.Color && strings.Contains(got, "\x1b") {
				t.Fatalf("ESC without colour:\n%q", got)
			}
			// The agent's text is there, its escapes made visible.
			visible := `<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>"
			plain := ownEscape.ReplaceAllString(got, "")
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
	clock := newFakeClock()
	var out bytes.Buffer
	r := NewJSONRenderer(&out, clock.Now)
	play(r, clock, evilTurn())
	r.Finish(acp.StopReasonEndTurn)
	r.Error("error"+evil, 3)
	got := out.String()
	if off := screenOffence(got); off != "" {
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
		if !contains(texts, w) {
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

func TestPromptCommand(t *testing.T) {
	forged := "echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la"
	tests := []struct {
		name string
		info terminal.Info
		want string
	}{
		{"argv", terminal.Info{Command: "go", Args: []string{"test", "./..."}, Argv: []string{"go", "test", "./..."}, Cwd: "/w"},
			"go test ./...\n  in /w"},
		{"resolved", terminal.Info{Command: "sh", Args: []string{"-c", "echo hi"}, Argv: []string{"/usr/bin/sh", "-c", "echo hi"}, Cwd: "/w"},
			"sh -c 'echo hi'\n  program: /usr/bin/sh\n  in /w"},
		{"shell line", terminal.Info{Command: forged, Shell: true, Argv: []string{"/bin/sh", "-c", forged}, Cwd: "/my dir"},
			`/bin/sh -c $'echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la'` + "\n  in '/my dir'"},
		{"args with controls", terminal.Info{Command: "printf", Args: []string{"a\nb", "it's", "\u202eevil", ""}, Argv: []string{"printf", "a\nb", "it's", "\u202eevil", ""}, Cwd: "/w"},
			`printf $'a\nb' 'it'\''s' $'\u202eevil' ''` + "\n  in /w"},
		{"env", terminal.Info{Command: "make", Args: []string{"x"}, Argv: []string{"make", "x"}, Cwd: "/w",
			Env: []terminal.EnvVar{{Name: "PATH", Value: "/tmp/evil:/usr/bin"}, {Name: "A", Value: "x y\x1b"}}},
			"make x\n  in /w\n  env: PATH=/tmp/evil:/usr/bin A=$'x y\\x1b'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promptCommand(&tt.info); got != tt.want {
				t.Fatalf("(-want +got):\n-%s\n+%s", tt.want, got)
			}
		})
	}
}

// TestApproverHostile: the questions show the agent's text with its
// escapes visible, and the command as it runs.
func TestApproverHostile(t *testing.T) {
	rec := &recorder{}
	term := newTTY(t)
	a := newApprover(ApprovalAsk, term.p, rec.report, rec.warn)
	forged := "echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la"
	done := make(chan bool, 1)
	go func() {
		done <- a.DecideTerminal(context.Background(), terminal.Info{Command: forged, Shell: true, Argv: []string{"/bin/sh", "-c", forged}, Cwd: "/w"}).Allow
	}()
	term.expect(t, `acpterm: the agent wants to run: /bin/sh -c $'echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la'`+"\n  in /w\n  allow?")
	term.answer(t, "n")
	if <-done {
		t.Fatal("allowed")
	}
	req := permRequest()
	title, kind := "title"+evil, acp.ToolKind("kind"+evil)
	req.ToolCall.Title, req.ToolCall.Kind = &title, &kind
	req.Options[0].Name = "Allow" + evil
	go func() {
		resp, _ := a.RequestPermission(context.Background(), req)
		_, ok := resp.Outcome.(*acp.SelectedPermissionOutcome)
		done <- ok
	}()
	term.expect(t, `  options: Allow<\x1b]52;c;aGk=\x07`)
	term.expect(t, "allow?")
	term.answer(t, "n")
	<-done
	if off := screenOffence(term.out.String()); off != "" {
		t.Fatalf("%s in the questions:\n%q", off, term.out.String())
	}
	for _, want := range []string{"permission for: title<\\x1b]52", " (kind<\\x1b]52", " (allow_once), "} {
		if !strings.Contains(term.out.String(), want) {
			t.Errorf("the question lacks %q:\n%s", want, term.out.String())
		}
	}
}

// TestWarnHostile: diagnostics that quote the agent, and the agent's own
// stderr lines, reach stderr sanitized; off a terminal an agent's SGR
// colours are dropped.
func TestWarnHostile(t *testing.T) {
	var stderr bytes.Buffer
	d := &driver{cfg: Config{Stderr: &stderr, Text: TextOptions{Color: true}}, r: NewTextRenderer(&bytes.Buffer{}, nil)}
	d.warn("acpterm: ignored " + evil + "\n")
	d.agentStderr([]byte("\x1b[31mred\x1b[0m log" + evil + "\r"))
	want := `acpterm: ignored <\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>\n" +
		`red log<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>\n"
	if got := stderr.String(); got != want {
		t.Fatalf("(-want +got):\n-%q\n+%q", want, got)
	}
}
