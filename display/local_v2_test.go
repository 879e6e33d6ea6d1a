//go:build unix

package display_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// cancelClient is a v2 client that cancels a terminal as soon as the
// agent shows it cancellable.
type cancelClient struct {
	conn      *acp.ClientConn
	cancelled chan error
	exited    chan struct{} // closed at the update that says the terminal exited
	exitOnce  sync.Once
}

func (c *cancelClient) SetConn(conn *acp.ClientConn) { c.conn = conn }

func (c *cancelClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

func (c *cancelClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (c *cancelClient) SessionUpdateV2(_ context.Context, n *acp.V2UpdateSessionNotification) error {
	u, ok := n.Update.(*acp.V2TerminalUpdate)
	if ok && u.ExitStatus != nil {
		// The session's view has applied it before this handler runs.
		c.exitOnce.Do(func() { close(c.exited) })
	}
	if !ok || u.Capabilities == nil || u.Capabilities.Cancel == nil {
		return nil
	}
	// Not from the handler itself, which must return for the answer to be read.
	go func() {
		_, err := c.conn.CancelTerminal(context.Background(), &acp.V2CancelTerminalRequest{SessionID: n.SessionID, TerminalID: u.TerminalID})
		c.cancelled <- err
	}()
	return nil
}

// On a v2 connection RunLocalCommand shows the command with v2's terminal
// updates, advertises cancel, and a terminal/cancel from the client kills
// it: the run ends failed, with the exit status the client sees.
func TestRunLocalCommandV2Cancel(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := acp.NewAgentConn(idleAgent{}, toAgentR, toClientW, nil)
	client := &cancelClient{cancelled: make(chan error, 1), exited: make(chan struct{})}
	cc := acp.NewClientConn(client, toClientR, toAgentW, &acp.ConnOptions{OfferV2: true})
	m := terminal.NewManager(&terminal.Options{KillGrace: 500 * time.Millisecond})
	defer func() {
		m.Close()
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := display.RunLocalCommand(ctx, ac, m, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep", Args: []string{"60"}, Cwd: acp.Ptr(t.TempDir())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-client.cancelled; err != nil {
		t.Fatalf("terminal/cancel: %v", err)
	}
	if res.Succeeded() {
		t.Errorf("a cancelled command succeeded: %s", res.Status())
	}
	// The agent sent the exit before RunLocalCommand returned; the client
	// handles notifications on its own, so wait until it has that one.
	select {
	case <-client.exited:
	case <-ctx.Done():
		t.Fatal("the client never got the update that says the terminal exited")
	}
	term := cc.View("s").Terminal(res.TerminalID)
	if term == nil || term.ExitStatus == nil {
		t.Fatalf("the client's view of the terminal: %+v", term)
	}
	if term.Capabilities != nil && term.Capabilities.Cancel != nil {
		t.Error("the exited terminal still advertises cancel")
	}
	if _, err := cc.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: "s", TerminalID: res.TerminalID}); !errors.Is(err, acp.ErrNotCancellable) {
		t.Errorf("cancelling the exited terminal: %v", err)
	}
}
