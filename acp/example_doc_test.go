package acp_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/acpterm/acpterm/acp"
)

// The code between the markers is the package doc's example, line for line
// (TestPackageDocExample checks it), so that the doc compiles and runs.

// doc example: begin
type myAgent struct{ conn *acp.AgentConn }

// SetConn is called before the first message: handlers may use a.conn.
func (a *myAgent) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *myAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *myAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}

// Prompt runs a turn. A long one watches ctx: AgentConn cancels it on the
// client's session/cancel and answers the turn "cancelled".
func (a *myAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{
		SessionID: req.SessionID,
		Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hello from the agent"}},
	})
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}

type myClient struct{}

func (myClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if m, ok := n.Update.(*acp.AgentMessageChunk); ok {
		if t, ok := m.Content.(*acp.TextContent); ok {
			fmt.Println("agent:", t.Text)
		}
	}
	return nil
}

func (myClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// runPair runs both sides in one process, over pipes. An agent process
// serves its stdio with acp.ServeAgent(ctx, &myAgent{}, os.Stdin,
// os.Stdout, nil); a client starts one with acp.StartAgent(cmd, myClient{}, nil).
func runPair(ctx context.Context) error {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(ctx, &myAgent{}, toAgentR, toClientW, nil) }()

	conn := acp.NewClientConn(myClient{}, toClientR, toAgentW, nil)
	if _, err := conn.Initialize(ctx, nil); err != nil {
		return err
	}
	sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/"})
	if err != nil {
		return err
	}
	resp, err := conn.Prompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "hi"}},
	})
	if err != nil {
		return err
	}
	fmt.Println("stop reason:", resp.StopReason)
	// Closing the client ends the agent's input: ServeAgent returns nil.
	return errors.Join(conn.Close(), <-served)
}

// doc example: end

// The package doc's agent and client, run.
func Example_agentAndClient() {
	if err := runPair(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// agent: hello from the agent
	// stop reason: end_turn
}

// waitingAgent's Prompt runs until its ctx ends: it has no Cancel method,
// and needs none.
type waitingAgent struct {
	myAgent
	started chan struct{}
}

func (a *waitingAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	close(a.started)
	<-ctx.Done()
	fmt.Println("agent: turn ended:", context.Cause(ctx))
	return nil, ctx.Err()
}

// AgentConn cancels a Prompt's ctx when the client cancels the turn, and
// answers it "cancelled" for the agent. On the client side, cancelling the
// ctx of ClientConn.Prompt sends session/cancel and returns the agent's
// answer.
func ExampleAgentConn() {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agent := &waitingAgent{started: make(chan struct{})}
	ctx := context.Background()
	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(ctx, agent, toAgentR, toClientW, nil) }()
	conn := acp.NewClientConn(myClient{}, toClientR, toAgentW, nil)
	defer func() { conn.Close(); <-served }()

	turnCtx, cancelTurn := context.WithCancel(ctx)
	go func() { <-agent.started; cancelTurn() }() // the user pressed Ctrl-C
	resp, err := conn.Prompt(turnCtx, &acp.PromptRequest{SessionID: "s1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("client: stop reason:", resp.StopReason)
	// Output:
	// agent: turn ended: acp: the client cancelled the turn
	// client: stop reason: cancelled
}
