package acp_test

import (
	"context"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// toolJobAgent leaves a tool call working in the background, cancellable.
type toolJobAgent struct {
	*bothAgent
	stop chan struct{}
	once sync.Once
}

func (a *toolJobAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	tc := &acp.ToolCall{ToolCallID: "fetch", Title: "fetch the logs", Kind: acp.ToolKindFetch, Status: acp.ToolCallStatusInProgress}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: tc}); err != nil {
		return nil, err
	}
	if err := a.conn.CancellableToolCall(ctx, req.SessionID, "fetch", func() { a.once.Do(func() { close(a.stop) }) }); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// work ends the tool call once cancelled, as the agent's own goroutine would.
func (a *toolJobAgent) work(ctx context.Context) error {
	select {
	case <-a.stop:
	case <-ctx.Done():
		return ctx.Err()
	}
	st := acp.ToolCallStatus("cancelled")
	return a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: "s1", Update: &acp.ToolCallUpdate{ToolCallID: "fetch", Status: &st}})
}

func TestGoAgentV2CancelToolCall(t *testing.T) {
	agent := &toolJobAgent{bothAgent: newBothAgent(), stop: make(chan struct{})}
	client := &listClient{listed: make(chan int, 8)}
	cc, _ := v2Pair(t, agent, client, &acp.ConnOptions{OfferV2: true})
	client.cc = cc
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "fetch"}}}); err != nil {
		t.Fatal(err)
	}
	items, _ := cc.View("s1").Background()
	if len(items) != 1 || items[0].ToolCall == nil || items[0].ToolCall.ToolCallID != "fetch" || !items[0].Cancellable {
		t.Fatalf("background %+v", items)
	}
	// The turn's state updates were handled before Prompt returned.
	for len(client.listed) > 0 {
		<-client.listed
	}
	worked := make(chan error, 1)
	go func() { worked <- agent.work(ctx) }()
	if _, err := cc.CancelToolCall(ctx, &acp.V2CancelToolCallRequest{SessionID: "s1", ToolCallID: "fetch"}); err != nil {
		t.Fatal(err)
	}
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	// The final status ends the background work; the state update that says so follows at once.
	for n := range client.listed {
		if n == 0 {
			break
		}
	}
	tc := cc.View("s1").ToolCall("fetch")
	if tc.Status == nil || *tc.Status != acp.V2ToolCallStatusCancelled || (tc.Capabilities != nil && tc.Capabilities.Cancel != nil) {
		t.Errorf("tool call after cancel %+v", tc)
	}
}

// listClient reports the length of the background list of every state update.
type listClient struct {
	v1Recorder
	cc     *acp.ClientConn
	listed chan int
}

func (c *listClient) SessionUpdateV2(_ context.Context, n *acp.V2UpdateSessionNotification) error {
	if _, ok := n.Update.(*acp.V2StateUpdate); ok {
		items, _ := c.cc.View(n.SessionID).Background()
		c.listed <- len(items)
	}
	return nil
}
