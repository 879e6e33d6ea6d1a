//go:build unix

package display_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// exampleAgent answers the baseline methods; the example drives its
// connection directly, as a Prompt handler would.
type exampleAgent struct{}

func (exampleAgent) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}
func (exampleAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}
func (exampleAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// exampleClient serves terminals with a terminal.Manager and prints the
// tool calls it is shown.
type exampleClient struct{ *terminal.Manager }

func (exampleClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (exampleClient) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		fmt.Printf("tool call %q: %s\n", u.Title, u.Status)
	case *acp.ToolCallUpdate:
		if u.Status != nil {
			fmt.Println("tool call:", *u.Status)
		}
	}
	return nil
}

// An agent running a command as one tool call: RunCommand creates the
// terminal in the client, reports the tool call with the terminal
// embedded, waits, reports how it ended and releases the terminal.
func ExampleRunCommand() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(nil)
	defer m.Close()
	ctx := context.Background()

	// The two ends of a connection, through in-memory pipes.
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	conn := acp.NewAgentConn(exampleAgent{}, toAgentR, toClientW, nil)
	client := acp.NewClientConn(exampleClient{Manager: m}, toClientR, toAgentW, nil)
	defer func() {
		client.Close()
		conn.Close()
		client.Wait()
		conn.Wait()
	}()
	if _, err := client.Initialize(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	sess, err := m.NewSessionOn(ctx, client, &acp.NewSessionRequest{Cwd: dir})
	if err != nil {
		fmt.Println(err)
		return
	}

	// What follows is the agent's side, typically inside its Prompt handler.
	res, err := display.RunCommand(ctx, conn, &acp.CreateTerminalRequest{
		SessionID: sess.SessionID,
		Command:   "echo",
		Args:      []string{"hello"},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit code %d, succeeded %t, output %q\n", *res.ExitStatus.ExitCode, res.Succeeded(), res.Output)
	// Output:
	// tool call "echo hello": in_progress
	// tool call: completed
	// exit code 0, succeeded true, output "hello\n"
}
