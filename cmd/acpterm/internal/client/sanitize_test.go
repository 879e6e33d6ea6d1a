package client

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// What the client shows on its own (questions, warnings, the agent's
// stderr, answers to in-session commands) is held to the rule the
// renderers keep: the agent's text reaches the screen with its escapes
// made visible (rendertest.Evil, rendertest.ScreenOffence). The
// renderers' own tests are in package render.

const evil = rendertest.Evil

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
	if off := rendertest.ScreenOffence(term.out.String()); off != "" {
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
	d := &driver{cfg: Config{Stderr: &stderr, Text: render.TextOptions{Color: true}}, r: render.NewText(&bytes.Buffer{}, nil)}
	d.warn("acpterm: ignored " + evil + "\n")
	d.agentStderr([]byte("\x1b[31mred\x1b[0m log" + evil + "\r"))
	want := `acpterm: ignored <\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>\n" +
		`red log<\x1b]52;c;aGk=\x07\x1b]0;pwned\x1b\\x1b[1A\x1b[2K\rX\x00\x07\u009b2K\u202eRLO\x1bP+q\x1b\\x7f` + "\uFFFD>\n"
	if got := stderr.String(); got != want {
		t.Fatalf("(-want +got):\n-%q\n+%q", want, got)
	}
}

// modeRefuser is an in-process agent that answers session/set_mode with an
// error whose message is hostile.
type modeRefuser struct{}

func (modeRefuser) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (modeRefuser) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}

func (modeRefuser) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (modeRefuser) Cancel(context.Context, *acp.CancelNotification) error { return nil }

func (modeRefuser) SetSessionMode(context.Context, *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: "no" + evil}
}

// TestSetCommandAgentErrorHostile: /mode with an agent that refuses it
// with a hostile error message shows the message on the session's
// terminal with its escapes visible.
func TestSetCommandAgentErrorHostile(t *testing.T) {
	got := refusedModeOutput(t, modeRefuser{})
	if off := rendertest.ScreenOffence(got); off != "" {
		t.Fatalf("%s reached the terminal:\n%q", off, got)
	}
	if !strings.Contains(got, `no<\x1b]52;c;aGk=`) {
		t.Fatalf("the agent's message is not shown: %q", got)
	}
}

// refusedModeOutput runs /mode b against agent, which refuses it, and
// returns what the session's terminal got.
func refusedModeOutput(t *testing.T, agent acp.Agent) string {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	ac := acp.NewAgentConn(agent, agentIn, agentOut, nil)
	conn := acp.NewClientConn(listingClient{}, clientIn, clientOut, nil)
	defer func() {
		conn.Close()
		ac.Close()
		for _, c := range []io.Closer{agentIn, clientOut, clientIn, agentOut} {
			c.Close()
		}
	}()
	var tty bytes.Buffer
	d := &driver{cfg: Config{TTYOut: &tty, Stderr: io.Discard, InitTimeout: 10 * time.Second},
		conn: conn, quit: make(chan struct{}), r: render.NewText(io.Discard, nil)}
	d.view = newSessionView(d.r)
	d.view.setState(&sessionState{sid: "s", modes: &acp.SessionModeState{CurrentModeID: "a",
		AvailableModes: []acp.SessionMode{{ID: "a", Name: "A"}, {ID: "b", Name: "B"}}}})
	if end := d.setCommand(context.Background(), settingMode, "b"); end {
		t.Fatal("the session ended")
	}
	return tty.String()
}
