//go:build linux

package terminal

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// sessionAgent names every new session sess_1 and loads any session, and
// counts the session/new requests it saw.
type sessionAgent struct {
	testAgent
	news atomic.Int32
}

func (a *sessionAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.news.Add(1)
	return &acp.NewSessionResponse{SessionID: "sess_1"}, nil
}

func (a *sessionAgent) LoadSession(context.Context, *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	return &acp.LoadSessionResponse{}, nil
}

// pwdIn runs pwd as the agent would, with no cwd, in the session, and
// returns where it ran.
func pwdIn(t *testing.T, ac *acp.AgentConn, sessionID acp.SessionID) string {
	t.Helper()
	ctx := testCtx(t)
	term, err := ac.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sessionID, Command: "pwd"})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if _, err := term.WaitForExit(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := term.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.Output)
}

// TestSessionCwdFromTheSession opens sessions through the manager: their
// terminals run in the session's cwd, not the manager's default, with no
// SetSessionCwd call, and a relative cwd is refused before the agent sees
// it.
func TestSessionCwdFromTheSession(t *testing.T) {
	m := newTestManager(t, &Options{DefaultCwd: t.TempDir()})
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	cc := acp.NewClientConn(testClient{m}, clientIn, clientOut, nil)
	defer cc.Close()
	agent := &sessionAgent{}
	ac := acp.NewAgentConn(agent, agentIn, agentOut, nil)
	defer ac.Close()
	ctx := testCtx(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}

	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.NewSessionOn(ctx, cc, &acp.NewSessionRequest{Cwd: work, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pwdIn(t, ac, sess.SessionID); got != work {
		t.Errorf("after NewSessionOn a create with no cwd ran in %q, want the session's %q", got, work)
	}

	loaded, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadSessionOn(ctx, cc, &acp.LoadSessionRequest{SessionID: "sess_2", Cwd: loaded, MCPServers: []acp.MCPServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := pwdIn(t, ac, "sess_2"); got != loaded {
		t.Errorf("after LoadSessionOn a create with no cwd ran in %q, want the session's %q", got, loaded)
	}

	_, err = m.NewSessionOn(ctx, cc, &acp.NewSessionRequest{Cwd: "rel", MCPServers: []acp.MCPServer{}})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("relative session cwd: %v, want ErrInvalid", err)
	}
	if n := agent.news.Load(); n != 1 {
		t.Errorf("the agent saw %d session/new, want 1 (the relative cwd must not reach it)", n)
	}
}
