//go:build unix

package acp_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// agentCommand is the command line of an ACP agent. A real client runs the agent's own program,
// say exec.Command("my-agent", "--acp"); these examples run the test binary, which serves a
// minimal agent on its stdin and stdout when ACPTERM_TEST_AGENT is set (see TestMain).
func agentCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Under -race a process sleeps a second at exit (GORACE atexit_sleep_ms) before it exits,
	// which Close would wait out; the caller's own GORACE settings still come last and win.
	cmd.Env = append(os.Environ(), "ACPTERM_TEST_AGENT=", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	return cmd
}

// A client starting an agent process and running one prompt turn with it.
func ExampleStartAgent() {
	cmd := agentCommand()
	cmd.Stderr = os.Stderr // the agent's log; nil discards it
	conn, err := acp.StartAgent(cmd, printingClient{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Close shuts the agent down: its stdin first, signals only if it lingers.
	defer conn.Close()

	ctx := context.Background()
	// A nil request sends protocol version 1 and the capabilities that follow from which
	// optional interfaces the client implements.
	init, err := conn.Initialize(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("protocol version:", init.ProtocolVersion)
	wd, _ := os.Getwd()
	// MCPServers is required on the wire; nil is sent as [].
	sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: wd})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := conn.Prompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "hello"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop reason:", resp.StopReason)
	// Output:
	// protocol version: 1
	// stop reason: end_turn
}

// terminalClient is a client that runs the agent's terminals with a terminal.Manager: embedding
// it adds the five terminal methods, so the client advertises clientCapabilities.terminal. It
// prints the tool calls the agent reports.
type terminalClient struct {
	*terminal.Manager
	printingClient
}

func (c terminalClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
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

// connectTerminals wires an agent (the echoAgent of Example) to a terminalClient through
// in-memory pipes, opens a session in dir and returns the agent's end of the connection.
// The client sets the session's cwd only once session/new has named the session.
func connectTerminals(ctx context.Context, m *terminal.Manager, dir string) (*acp.AgentConn, acp.SessionID, func(), error) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agent := &echoAgent{}
	agent.conn = acp.NewAgentConn(agent, toAgentR, toClientW, nil)
	client := acp.NewClientConn(terminalClient{Manager: m}, toClientR, toAgentW, nil)
	closeAll := func() {
		client.Close()
		agent.conn.Close()
	}
	if _, err := client.Initialize(ctx, nil); err != nil {
		closeAll()
		return nil, "", nil, err
	}
	sess, err := m.NewSessionOn(ctx, client, &acp.NewSessionRequest{Cwd: dir})
	if err != nil {
		closeAll()
		return nil, "", nil, err
	}
	return agent.conn, sess.SessionID, closeAll, nil
}

// An agent running a command in the client's terminal step by step: create, wait, read the
// output, release.
func ExampleAgentConn_CreateTerminal() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(nil)
	defer m.Close()
	ctx := context.Background()
	conn, sid, closeConns, err := connectTerminals(ctx, m, dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeConns()

	// What follows is the agent's side, typically inside its Prompt handler.
	limit := uint64(1 << 20)
	term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{
		SessionID:       sid,
		Command:         "sh",
		Args:            []string{"-c", "echo hello; exit 3"},
		OutputByteLimit: &limit, // the client keeps at most the last MiB
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer term.Close() // releases the terminal if nothing else did

	exit, err := term.WaitForExit(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := term.Output(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit code %d, output %q, truncated %t\n", *exit.ExitCode, out.Output, out.Truncated)
	if err := term.Release(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// exit code 3, output "hello\n", truncated false
}
