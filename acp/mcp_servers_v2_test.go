package acp

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// mcpAgent records the MCP servers its sessions are given.
type mcpAgent struct {
	fullAgent
	got chan []MCPServer
}

func (a *mcpAgent) NewSession(_ context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	a.got <- req.MCPServers
	return &NewSessionResponse{SessionID: "s"}, nil
}

func (a *mcpAgent) ResumeSession(_ context.Context, req *ResumeSessionRequest) (*ResumeSessionResponse, error) {
	a.got <- req.MCPServers
	return &ResumeSessionResponse{}, nil
}

// TestMCPServersOverV2: the MCP servers a Go client gives session/new and
// session/resume in v1's words cross a v2 connection (a stdio server gains
// v2's "type") and reach a Go agent in v1's words as they were sent.
func TestMCPServersOverV2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agent := &mcpAgent{got: make(chan []MCPServer, 1)}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := NewAgentConn(agent, toAgentR, toClientW, nil)
	cc := NewClientConn(noTerminalClient{}, toClientR, toAgentW, &ConnOptions{OfferV2: true})
	defer func() {
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	}()
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cc.ProtocolVersion() != ProtocolVersion2 {
		t.Fatalf("version %d", cc.ProtocolVersion())
	}
	servers := []MCPServer{
		&MCPServerStdio{Name: "acpterm", Command: "/usr/bin/acpterm", Args: []string{"mcp", "--connect", "/tmp/s"}, Env: []EnvVariable{{Name: "TOKEN", Value: "x"}}},
		&MCPServerHTTP{Name: "web", URL: "https://mcp.example/", Headers: []HTTPHeader{{Name: "Authorization", Value: "Bearer y"}}},
	}
	want, _ := json.Marshal(servers)
	check := func(what string) {
		t.Helper()
		got, _ := json.Marshal(<-agent.got)
		if string(got) != string(want) {
			t.Errorf("%s: the agent got\n%s\nwant\n%s", what, got, want)
		}
	}
	if _, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/w", MCPServers: servers}); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	check("session/new")
	if _, err := cc.ResumeSession(ctx, &ResumeSessionRequest{SessionID: "s", Cwd: "/w", MCPServers: servers}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	check("session/resume")
}
