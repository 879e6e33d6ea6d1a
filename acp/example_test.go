package acp_test

import (
	"context"
	"fmt"
	"io"

	"github.com/acpterm/acpterm/acp"
)

// echoAgent answers every prompt by streaming its text back.
type echoAgent struct{ conn *acp.AgentConn }

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

func (a *echoAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

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

// An agent and a client talking over an in-memory pipe. Over a real agent
// process, acp.StartAgent makes the ClientConn instead.
func Example() {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()

	agent := &echoAgent{}
	agent.conn = acp.NewAgentConn(agent, toAgentR, toClientW, nil)
	defer agent.conn.Close()

	client := acp.NewClientConn(printingClient{}, toClientR, toAgentW, nil)
	defer client.Close()

	ctx := context.Background()
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
