//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

// The escape-sequence case of the hostile-agent suite: an agent puts
// terminal escapes in every string it controls, and tries to make a
// permission question read as another command. Whatever it sends, the
// only escape sequences acpterm writes are its own, and the question shows
// what would really run.

// escEvil carries OSC 52 (clipboard), OSC 0 (title), cursor up and erase
// line, CR, NUL, BEL, a C1 CSI, a bidi override, DCS, DEL and invalid
// UTF-8 (which JSON turns into U+FFFD on the way).
const escEvil = "<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\\x7f\xff>"

// escArgEvil is escEvil without NUL, which no argv can hold.
var escArgEvil = strings.ReplaceAll(escEvil, "\x00", "")

// escForged is a shell line that, printed raw, erases itself and leaves
// a harmless-looking question on the screen.
const escForged = "echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la"

// escForgedShown is how the question must show it: quoted, escapes visible.
const escForgedShown = `-c $'echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la'`

func init() {
	registerHostile("escapes", func() int {
		a := &escAgent{}
		conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, nil)
		a.conn.Store(conn)
		<-conn.Done()
		conn.Close()
		return 0
	})
}

type escAgent struct{ conn atomic.Pointer[acp.AgentConn] }

func (a *escAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}, nil
}

func (a *escAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_escapes"}, nil
}

func (a *escAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

func (a *escAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn, sid := a.conn.Load(), req.SessionID
	fmt.Fprintln(os.Stderr, "stderr"+escEvil)
	fmt.Fprintln(os.Stderr, "\x1b[31mred log\x1b[0m")
	send := func(u acp.SessionUpdate) error {
		return conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid, Update: u})
	}
	completed, kind := acp.ToolCallStatusCompleted, acp.ToolKind("edit"+escEvil)
	line := uint32(3)
	meta := func(key string, v any) acp.Meta {
		b, _ := json.Marshal(v)
		return acp.Meta{key: b}
	}
	updates := []acp.SessionUpdate{
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "message" + escEvil + "\n"}},
		&acp.AgentThoughtChunk{Content: &acp.TextContent{Text: "thought" + escEvil + "\n"}},
		&acp.Plan{Entries: []acp.PlanEntry{{Content: "plan" + escEvil, Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusPending}}},
		&acp.ToolCall{ToolCallID: "call_edit", Title: "title" + escEvil, Kind: kind, Status: completed,
			Locations: []acp.ToolCallLocation{{Path: "/loc" + escEvil, Line: &line}},
			Content: []acp.ToolCallContent{
				&acp.Content{Content: &acp.TextContent{Text: "content" + escEvil}},
				&acp.Diff{Path: "/diff" + escEvil, NewText: "new" + escEvil},
			}},
		// A command the agent runs itself, shown through the display
		// extension: its cwd, output and signal are the agent's too.
		&acp.ToolCall{ToolCallID: "call_display", Title: "display" + escEvil, Kind: acp.ToolKindExecute, Status: completed,
			Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "dterm"}},
			Meta:    meta("terminal_info", map[string]any{"terminal_id": "dterm", "cwd": "/cwd" + escEvil})},
		&acp.ToolCallUpdate{ToolCallID: "call_display", Meta: meta("terminal_output", map[string]any{"terminal_id": "dterm", "data": "dout" + escEvil + "\n"})},
		&acp.ToolCallUpdate{ToolCallID: "call_display", Meta: meta("terminal_exit", map[string]any{"terminal_id": "dterm", "signal": "SIG" + escEvil})},
	}
	for _, u := range updates {
		if err := send(u); err != nil {
			return nil, err
		}
	}
	// The forged command: the user must see what it is and refuse it
	// (with --approve-all it runs, and prints REAL).
	if term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: escForged}); err == nil {
		_, _ = term.WaitForExit(ctx)
		defer term.Close()
	}
	// A command with hostile arguments, whose output is hostile too.
	term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: "printf",
		Args: []string{"%s\\n", "out" + escArgEvil}, Env: []acp.EnvVariable{{Name: "ESCAPES", Value: escArgEvil}}})
	if err == nil {
		_, _ = term.WaitForExit(ctx)
		defer term.Close()
	}
	title := "perm" + escEvil
	_, _ = conn.RequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: sid,
		ToolCall: acp.ToolCallUpdate{ToolCallID: "call_perm", Title: &title},
		Options: []acp.PermissionOption{
			{OptionID: "yes", Name: "Yes" + escEvil, Kind: acp.PermissionOptionKindAllowOnce},
			{OptionID: "no", Name: "No" + escEvil, Kind: acp.PermissionOptionKindRejectOnce},
		}})
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: "error" + escEvil}
}

// escOwn is every escape sequence acpterm writes itself: SGR colours and
// the live region's redraw (cursor up, CR, erase below).
var escOwn = regexp.MustCompile(`\x1b\[[0-9;]*m|\x1b\[[0-9]+A\r\x1b\[J`)

// escOffence returns the first thing in out that a terminal would act on
// beyond acpterm's own sequences and line breaks, or "".
func escOffence(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	rest := strings.ReplaceAll(escOwn.ReplaceAllString(out, ""), "\r\n", "\n")
	for i, r := range rest {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U after %q", r, rest[max(i-60, 0):i])
		}
	}
	return ""
}

// TestHostileEscapes runs the agent on a pseudo-terminal (colours, live
// region, questions asked) and on pipes.
func TestHostileEscapes(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=escapes"}
	// What each agent string must look like on the screen: the escapes
	// visible, nothing interpreted.
	visible := `<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>"
	wants := []string{
		"message" + visible, "· thought" + visible, "plan" + visible, "title" + visible + " [edit" + visible + "]",
		"content" + visible, "edit /diff" + visible, "display" + visible, "killed by SIG" + visible,
		"│ X2KRLO\uFFFD>", // command output (both terminals): sequences dropped, after the last CR
		"stderr" + visible, "error" + visible,
	}
	t.Run("pty", func(t *testing.T) {
		t.Parallel()
		out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
			s.expect(t, "the agent wants to run: ")
			s.expect(t, escForgedShown)
			s.expect(t, "allow?")
			s.send(t, tty, "n", "the agent wants to run: printf '%s\\n' $'out", "allow?")
			s.send(t, tty, "y", "permission for: perm", "allow?")
			tty.WriteString("n")
		}, "run", "-p", "hi", "--", testExe(t))
		if code != 3 {
			t.Fatalf("exit %d, want 3:\n%q", code, out)
		}
		if off := escOffence(out); off != "" {
			t.Fatalf("%s reached the terminal:\n%q", off, out)
		}
		plain := strings.ReplaceAll(escOwn.ReplaceAllString(out, ""), "\r\n", "\n")
		for _, want := range append(wants,
			"the agent wants to run: ", escForgedShown, "  in ",
			"permission denied: run "+`echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la`,
			`printf '%s\n' $'out<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\\x1b[1A\x1b[2K\rX\x07\u009b2K\u202eRLO\x1bP+q\x1b\\\x7f`+"\uFFFD>'",
			`env: ESCAPES=$'<\x1b]52`, "permission for: perm"+visible, "options: Yes"+visible+" (allow_once), No"+visible+" (reject_once)",
		) {
			if !strings.Contains(plain, want) {
				t.Errorf("the terminal lacks %q", want)
			}
		}
		// On a terminal the agent's stderr is acpterm's dim line, prefixed
		// with the agent's name: the agent's own SGR colours are dropped,
		// since their reset would end the dimming.
		if !strings.Contains(out, "\x1b[2m"+filepath.Base(testExe(t))+": red log\x1b[0m") || strings.Contains(out, "\x1b[31mred log") {
			t.Errorf("the agent's coloured stderr line is not shown dimmed, as acpterm's own")
		}
		if t.Failed() {
			t.Fatalf("terminal output:\n%s", plain)
		}
	})
	t.Run("pipes", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{env: env}, "run", "--approve-all", "-p", "hi", "--", testExe(t))
		if r.code != 3 {
			t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		both := r.stdout + r.stderr
		if strings.Contains(both, "\x1b") {
			t.Fatalf("ESC without a terminal:\nstdout %q\nstderr %q", r.stdout, r.stderr)
		}
		if off := escOffence(both); off != "" {
			t.Fatalf("%s in the output:\nstdout %q\nstderr %q", off, r.stdout, r.stderr)
		}
		for _, want := range append(wants, "red log", "│ REAL") {
			if !strings.Contains(both, want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		if t.Failed() {
			t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
	})
}
