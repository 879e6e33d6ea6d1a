package acp_test

import (
	"context"
	"fmt"
	"io"

	"github.com/acpterm/acpterm/acp"
)

// echoAgent answers every prompt by streaming its text back.
type echoAgent struct{ conn *acp.AgentConn }

// echoAgent sends updates from its handlers, so it takes its connection
// through SetConn, which is called before the first message is served.
var _ acp.AgentConnSetter = (*echoAgent)(nil)

func (a *echoAgent) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *echoAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *echoAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "session-1"}, nil
}

func (a *echoAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	for _, block := range req.Prompt {
		if text, ok := block.(*acp.TextContent); ok {
			err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{
				SessionID: req.SessionID,
				Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "you said: " + text.Text}},
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// printingClient prints the agent's messages and refuses every permission.
type printingClient struct{}

func (printingClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if chunk, ok := n.Update.(*acp.AgentMessageChunk); ok {
		if text, ok := chunk.Content.(*acp.TextContent); ok {
			fmt.Println("agent:", text.Text)
		}
	}
	return nil
}

func (printingClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// An agent and a client talking over an in-memory pipe. An agent process
// serves on its stdin and stdout, with acp.ServeAgent(ctx, agent, os.Stdin,
// os.Stdout, nil) as its main; over a real agent process, acp.StartAgent
// makes the ClientConn.
func Example() {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx := context.Background()

	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(ctx, &echoAgent{}, toAgentR, toClientW, nil) }()
	defer func() { <-served }() // the client's Close ends the agent's input

	client := acp.NewClientConn(printingClient{}, toClientR, toAgentW, nil)
	defer client.Close()

	if _, err := client.Initialize(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	sess, err := client.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/tmp", MCPServers: []acp.MCPServer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Prompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "hello"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Every update sent before the answer has been handled by now.
	fmt.Println("stop reason:", resp.StopReason)
	// Output:
	// agent: you said: hello
	// stop reason: end_turn
}

// ServeAgent runs until the client ends the agent's input, then returns
// nil; if ctx ends first it stops serving and returns ctx's error.
func ExampleServeAgent() {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(ctx, &echoAgent{}, toAgentR, toClientW, nil) }()

	client := acp.NewClientConn(printingClient{}, toClientR, toAgentW, nil)
	init, err := client.Initialize(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("protocol version:", init.ProtocolVersion)
	fmt.Println("client closes:", client.Close())
	fmt.Println("ServeAgent:", <-served)

	// The same agent, stopped by its context while the client stays.
	toAgentR, toAgentW = io.Pipe()
	toClientR, toClientW = io.Pipe()
	client = acp.NewClientConn(printingClient{}, toClientR, toAgentW, nil)
	defer client.Close()
	go func() { served <- acp.ServeAgent(ctx, &echoAgent{}, toAgentR, toClientW, nil) }()
	cancel()
	fmt.Println("ServeAgent:", <-served)
	// Output:
	// protocol version: 1
	// client closes: <nil>
	// ServeAgent: <nil>
	// ServeAgent: context canceled
}
