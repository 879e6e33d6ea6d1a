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
)

// What the client shows on its own (warnings, the agent's stderr,
// answers to in-session commands) is held to the rule the renderers keep:
// the agent's text reaches the screen with its escapes made visible
// (rendertest.Evil, rendertest.ScreenOffence). The renderers' own tests
// are in package render, the permission questions' in package
// permission.

const evil = rendertest.Evil

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
