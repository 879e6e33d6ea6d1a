package acp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/acpterm/acpterm/acp"
)

// jobsAgent is written once, against the v1 types. Its turn answers and
// starts a job, a display terminal that keeps running after the turn and
// that the client may cancel. Served to a v2 client, AgentConn ends the
// turn with an idle state update listing the job; served to a v1 client,
// it answers session/prompt as before.
type jobsAgent struct {
	conn *acp.AgentConn
	stop chan struct{} // closed when the job is cancelled
	once sync.Once
	done chan struct{} // closed when the job's end has been reported
}

func (a *jobsAgent) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *jobsAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "jobs", Version: "1.0"}}, nil
}

func (a *jobsAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}

func (a *jobsAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	say := &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "starting the build"}}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: say}); err != nil {
		return nil, err
	}
	// How to stop the job; on a v1 connection this does nothing.
	stop := func() { a.once.Do(func() { close(a.stop) }) }
	if err := a.conn.CancellableTerminal(ctx, req.SessionID, "build", stop); err != nil {
		return nil, err
	}
	cmd := "make all"
	started, err := (&acp.V2TerminalUpdate{TerminalID: "build", Command: &cmd}).SessionUpdate()
	if err != nil {
		return nil, err
	}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: started}); err != nil {
		return nil, err
	}
	go a.runJob(req.SessionID)
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// runJob stands for the build: it ends when cancelled, and reports its
// exit status.
func (a *jobsAgent) runJob(sid acp.SessionID) {
	defer close(a.done)
	select {
	case <-a.stop:
	case <-a.conn.Done():
		return
	}
	sig := "SIGTERM"
	exited, err := (&acp.V2TerminalUpdate{TerminalID: "build", ExitStatus: &acp.V2TerminalExitStatus{Signal: &sig}}).SessionUpdate()
	if err == nil {
		_ = a.conn.SessionUpdate(context.Background(), &acp.SessionNotification{SessionID: sid, Update: exited})
	}
}

// jobsClient takes v2 updates as they are, and prints how the session's
// background work changes: the events a /jobs view would follow.
type jobsClient struct {
	conn   *acp.ClientConn
	ended  bool          // the job reported its exit
	listed chan struct{} // closed at the state update after the job's exit
}

func (c *jobsClient) SetConn(conn *acp.ClientConn) { c.conn = conn }

func (c *jobsClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	return nil // a v1 connection's updates; this example offers v2
}

func (c *jobsClient) SessionUpdateV2(ctx context.Context, n *acp.V2UpdateSessionNotification) error {
	switch u := n.Update.(type) {
	case *acp.V2StateUpdate:
		items, _ := c.conn.View(n.SessionID).Background()
		fmt.Printf("state %T, %d background job(s)\n", u.State, len(items))
		if c.ended {
			close(c.listed)
		}
	case *acp.V2TerminalUpdate:
		if u.ExitStatus != nil {
			fmt.Println("job", u.TerminalID, "ended by", *u.ExitStatus.Signal)
			c.ended = true
		}
	}
	return nil
}

func (c *jobsClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// A client that offers ACP v2 and an agent written once against the v1
// types, which AgentConn serves in whichever version the client asks for.
// Prompt still returns the turn's stop reason, now from the idle state
// update; the session's View lists the job the turn left running, and
// CancelTerminal stops it.
func ExampleClientConn_v2() {
	ctx := context.Background()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agent := &jobsAgent{stop: make(chan struct{}), done: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(ctx, agent, toAgentR, toClientW, nil) }()

	client := &jobsClient{listed: make(chan struct{})}
	conn := acp.NewClientConn(client, toClientR, toAgentW, &acp.ConnOptions{OfferV2: true})
	if _, err := conn.Initialize(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("protocol version", conn.ProtocolVersion())
	sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/work"})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := conn.Prompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "build it"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop reason:", resp.StopReason)

	items, _ := conn.View(sess.SessionID).Background()
	for _, it := range items {
		fmt.Printf("job %s: %s, cancellable %v\n", it.Terminal.TerminalID, *it.Terminal.Command, it.Cancellable)
		if _, err := conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: sess.SessionID, TerminalID: it.Terminal.TerminalID}); err != nil {
			fmt.Println(err)
		}
	}
	<-client.listed
	<-agent.done
	fmt.Println(errors.Join(conn.Close(), <-served))
	// Output:
	// protocol version 2
	// state *acp.V2RunningStateUpdate, 0 background job(s)
	// state *acp.V2IdleStateUpdate, 1 background job(s)
	// stop reason: end_turn
	// job build: make all, cancellable true
	// job build ended by SIGTERM
	// state *acp.V2IdleStateUpdate, 0 background job(s)
	// <nil>
}

// The same agent serves a v1 client: the turn is the answer to
// session/prompt, and the job's updates reach the client as the v2
// terminal updates v1 carries as unknown updates (package display reads
// them).
func ExampleAgentConn_bothVersions() {
	ctx := context.Background()
	for _, offerV2 := range []bool{false, true} {
		toAgentR, toAgentW := io.Pipe()
		toClientR, toClientW := io.Pipe()
		agent := &jobsAgent{stop: make(chan struct{}), done: make(chan struct{})}
		served := make(chan error, 1)
		go func() { served <- acp.ServeAgent(ctx, agent, toAgentR, toClientW, nil) }()
		conn := acp.NewClientConn(printingClient{}, toClientR, toAgentW, &acp.ConnOptions{OfferV2: offerV2})
		if _, err := conn.Initialize(ctx, nil); err != nil {
			fmt.Println(err)
			return
		}
		sess, _ := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/work"})
		resp, err := conn.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "go"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("v%d: %s\n", conn.ProtocolVersion(), resp.StopReason)
		// Closing ends the job's connection: the job returns without an exit report.
		fmt.Println(errors.Join(conn.Close(), <-served))
		<-agent.done
	}
	// Output:
	// agent: starting the build
	// v1: end_turn
	// <nil>
	// agent: starting the build
	// v2: end_turn
	// <nil>
}
