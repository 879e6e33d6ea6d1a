package display

import (
	"context"
	"io"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// pair connects agent and client through in-memory pipes and closes both
// ends when the test ends.
func pair(t testing.TB, agent acp.Agent, client acp.Client) (*acp.ClientConn, *acp.AgentConn) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := acp.NewAgentConn(agent, toAgentR, toClientW, nil)
	cc := acp.NewClientConn(client, toClientR, toAgentW, nil)
	t.Cleanup(func() {
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	})
	return cc, ac
}

// minimalAgent implements only the required Agent methods.
type minimalAgent struct{}

func (minimalAgent) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{}, nil
}
func (minimalAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}
func (minimalAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// minimalClient implements only the required Client methods.
type minimalClient struct{}

func (minimalClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}
func (minimalClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }
