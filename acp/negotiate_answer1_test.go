package acp

import (
	"context"
	"io"
	"testing"
	"time"
)

// terminalAgent is an agent that runs its commands in the client's
// terminals: offered 2, it answers 1 when the client offers terminals
// in v1, since v2 has none.
type terminalAgent struct {
	fullAgent
	seen chan *InitializeRequest
	// v2 answers 2 whatever the client offers in v1.
	v2 bool
}

func (a *terminalAgent) Initialize(_ context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	a.seen <- req
	v := req.ProtocolVersion
	if req.ClientCapabilities != nil && req.ClientCapabilities.Terminal && !a.v2 {
		v = ProtocolVersion1
	}
	return &InitializeResponse{ProtocolVersion: v, AgentInfo: &Implementation{Name: "terminals", Version: "1"}}, nil
}

// noTerminalClient is a client without terminals or fs.
type noTerminalClient struct{}

func (noTerminalClient) RequestPermission(context.Context, *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	return &RequestPermissionResponse{Outcome: &CancelledPermissionOutcome{}}, nil
}
func (noTerminalClient) SessionUpdate(context.Context, *SessionNotification) error { return nil }

// TestNegotiateAgentAnswers1: an Agent offered 2 sees what the client
// would give it in v1 (terminals here) with ProtocolVersion 2; answering
// 1, it is served v1 and has the client's terminals; a client without
// terminals gets v2 from the same agent, which then has none.
func TestNegotiateAgentAnswers1(t *testing.T) {
	for _, tc := range []struct {
		name      string
		client    Client
		v2        bool // the agent answers 2 anyway
		want      ProtocolVersion
		terminals bool // offered in v1
	}{
		{"a client with terminals", &fullClient{}, false, ProtocolVersion1, true},
		{"a client without", &noTerminalClient{}, false, ProtocolVersion2, false},
		{"an agent that answers 2 to a client with terminals", &fullClient{}, true, ProtocolVersion2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			agent := &terminalAgent{seen: make(chan *InitializeRequest, 1), v2: tc.v2}
			toAgentR, toAgentW := io.Pipe()
			toClientR, toClientW := io.Pipe()
			ac := NewAgentConn(agent, toAgentR, toClientW, nil)
			cc := NewClientConn(tc.client, toClientR, toAgentW, &ConnOptions{OfferV2: true})
			defer func() {
				cc.Close()
				ac.Close()
				cc.Wait()
				ac.Wait()
			}()
			resp, err := cc.Initialize(ctx, &InitializeRequest{ClientInfo: &Implementation{Name: "c", Version: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			req := <-agent.seen
			if req.ProtocolVersion != ProtocolVersion2 || req.ClientCapabilities == nil || req.ClientCapabilities.Terminal != tc.terminals {
				t.Errorf("the agent saw version %d, capabilities %+v; want 2 and terminals %v", req.ProtocolVersion, req.ClientCapabilities, tc.terminals)
			}
			if req.ClientInfo == nil || req.ClientInfo.Name != "c" {
				t.Errorf("the agent saw client info %+v", req.ClientInfo)
			}
			if resp.ProtocolVersion != tc.want || cc.ProtocolVersion() != tc.want || ac.ProtocolVersion() != tc.want {
				t.Fatalf("answer %d, client %d, agent %d; want %d", resp.ProtocolVersion, cc.ProtocolVersion(), ac.ProtocolVersion(), tc.want)
			}
			if resp.AgentInfo == nil || resp.AgentInfo.Name != "terminals" {
				t.Errorf("agent info %+v", resp.AgentInfo)
			}
			// The terminals are the agent's only over v1.
			v1 := tc.want == ProtocolVersion1
			if caps := ac.ClientCapabilities(); caps.Terminal != v1 {
				t.Errorf("ClientCapabilities() = %+v after the answer, want terminals %v", caps, v1)
			}
			_, err = ac.CreateTerminal(ctx, &CreateTerminalRequest{SessionID: "s", Command: "true"})
			if v1 != (err == nil) {
				t.Errorf("terminal/create over v%d: %v", tc.want, err)
			}
		})
	}
}

// TestNegotiateOnlyV2: with OnlyV2 the offer carries nothing of v1, so an
// agent that answers 1 only for the client's terminals answers 2.
func TestNegotiateOnlyV2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agent := &terminalAgent{seen: make(chan *InitializeRequest, 1)}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := NewAgentConn(agent, toAgentR, toClientW, nil)
	cc := NewClientConn(&fullClient{}, toClientR, toAgentW, &ConnOptions{OfferV2: true, OnlyV2: true})
	defer func() {
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	}()
	if _, err := cc.Initialize(ctx, &InitializeRequest{ClientInfo: &Implementation{Name: "c", Version: "1"}}); err != nil {
		t.Fatal(err)
	}
	if req := <-agent.seen; req.ClientCapabilities == nil || req.ClientCapabilities.Terminal || req.ClientInfo == nil || req.ClientInfo.Name != "c" {
		t.Errorf("the agent saw capabilities %+v, info %+v; want no terminals, info c", req.ClientCapabilities, req.ClientInfo)
	}
	if cc.ProtocolVersion() != ProtocolVersion2 || ac.ProtocolVersion() != ProtocolVersion2 {
		t.Errorf("client %d, agent %d; want 2", cc.ProtocolVersion(), ac.ProtocolVersion())
	}
}
