//go:build unix

package display_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// announcingClient is a wireClient that says when the tool call of a
// command has been announced.
type announcingClient struct {
	wireClient
	announced chan struct{}
}

func (c *announcingClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if _, ok := n.Update.(*acp.ToolCall); ok {
		c.announced <- struct{}{}
	}
	return c.wireClient.SessionUpdate(ctx, n)
}

// TestRunLocalCommandClientGone: a client that disconnects while a silent
// local command runs ends the command, as it ends RunCommand's wait for
// the client's: nobody is left to see its output or its result. The
// command runs on a ctx of the agent's own, not a request's, which the end
// of the connection would have cancelled. It used to run on until it
// exited by itself; the Timeout is only the test's guard, and its expiry
// is the failure.
func TestRunLocalCommandClientGone(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	client := &announcingClient{announced: make(chan struct{}, 1)}
	ac := acp.NewAgentConn(idleAgent{}, toAgentR, toClientW, nil)
	cc := acp.NewClientConn(client, toClientR, toAgentW, nil)
	m := terminal.NewManager(&terminal.Options{KillGrace: 500 * time.Millisecond})
	defer func() {
		m.Close()
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	}()
	if _, err := cc.Initialize(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := m.SetSessionCwd(context.Background(), "s", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-client.announced
		cc.Close() // the client goes away mid-command
	}()
	res, err := display.RunLocalCommand(context.Background(), ac, m,
		&acp.CreateTerminalRequest{SessionID: "s", Command: "sleep", Args: []string{"3600"}},
		&display.LocalCommandOptions{CommandOptions: display.CommandOptions{Timeout: 20 * time.Second}})
	if !errors.Is(err, acp.ErrConnClosed) {
		t.Errorf("err = %v, want one wrapping ErrConnClosed", err)
	}
	if res == nil || res.TimedOut || res.ExitStatus.Signal == nil {
		t.Errorf("result %+v: the command was not killed when the client went away", res)
	}
	if live := m.Terminals("s"); len(live) != 0 {
		t.Errorf("terminals left: %v", live)
	}
}
