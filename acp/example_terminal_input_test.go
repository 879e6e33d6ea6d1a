//go:build unix

package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// inputClient is a terminalClient that also takes input: terminal.InputHandler serves acpterm's
// _acpterm/terminal/* methods on the Manager, and with them the client advertises
// clientCapabilities._meta["acpterm/input"].
type inputClient struct {
	terminalClient
	acp.TerminalInputHandler
}

// An agent answering a command that reads its stdin: the terminal is created with a stdin pipe
// (TerminalOptions.Stdin; TerminalOptions.PTY asks for a pseudo-terminal the same way), and the
// handle writes to it. A client that does not serve input makes CreateTerminalWith and Write
// fail with acp.ErrNoTerminalInput before anything is sent.
func ExampleTerminalHandle_Write() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	ctx := context.Background()

	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agent := &echoAgent{}
	agent.conn = acp.NewAgentConn(agent, toAgentR, toClientW, nil)
	defer agent.conn.Close()
	client := acp.NewClientConn(inputClient{terminalClient{Manager: m}, terminal.InputHandler(m)}, toClientR, toAgentW, nil)
	defer client.Close()
	// The Manager reads acpterm/stdin on terminal/create; the client says it does.
	caps := &acp.ClientCapabilities{Meta: acp.Meta{terminal.MetaStdin: json.RawMessage("true")}}
	if _, err := client.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion1, ClientCapabilities: caps}); err != nil {
		fmt.Println(err)
		return
	}

	// The agent's side.
	conn := agent.conn
	fmt.Println("client takes input:", conn.ServesTerminalInput())
	term, err := conn.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{
		SessionID: "sess_1",
		Command:   `read name; echo "hello, $name"`,
	}, &acp.TerminalOptions{Stdin: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer term.Close()
	if err := term.Write(ctx, "Ada\n"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := term.WaitForExit(ctx); err != nil {
		fmt.Println(err)
		return
	}
	out, err := term.Output(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", out.Output)
	// Output:
	// client takes input: true
	// "hello, Ada\n"
}
