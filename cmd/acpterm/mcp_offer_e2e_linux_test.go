//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { registerHostile("mcpclient", func() int { return serveAgent(&mcpClientAgent{}) }) }

// mcpClientAgent plays an agent that runs its commands through the MCP
// server its client offers in session/new, with the official SDK's client
// as agents do: the prompt is the command; the tool's answer, or what is
// wrong, comes back as the agent's message, with the offered entry.
type mcpClientAgent struct {
	baseAgent
	servers []acp.MCPServer
	// meta, if set, is the tools/call's _meta.
	meta mcp.Meta
}

func (a *mcpClientAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.servers = req.MCPServers
	return &acp.NewSessionResponse{SessionID: "sess_mcp"}, nil
}

func (a *mcpClientAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	var cmdLine string
	for _, b := range req.Prompt {
		if t, ok := b.(*acp.TextContent); ok {
			cmdLine += t.Text
		}
	}
	text := a.run(ctx, cmdLine)
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: text},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (a *mcpClientAgent) run(ctx context.Context, cmdLine string) string {
	var srv *acp.MCPServerStdio
	for _, s := range a.servers {
		if st, ok := s.(*acp.MCPServerStdio); ok && st.Name == "acpterm" {
			srv = st
		}
	}
	if srv == nil {
		return "NO SERVER OFFERED"
	}
	entry, _ := json.Marshal(srv)
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	cmd.Stderr = os.Stderr // the relay's complaints, on the agent's stderr
	for _, e := range srv.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "fake-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Sprintf("CONNECT FAILED: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: a.meta, Name: "exec_command", Arguments: map[string]any{"cmd": cmdLine}})
	if err != nil {
		return fmt.Sprintf("CALL FAILED: %v", err)
	}
	out := "ENTRY " + string(entry) + "\nRESULT\n"
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out
}

// TestRunOffersMCP: with the offer on, acpterm run gives the agent a
// stdio server (no type; args and env present) that relays to the run:
// the agent's exec_command runs under the run's sandbox (a write outside
// the workspace is refused) and its terminal is shown live by the run.
// The same from an agent confined by --sandbox-agent: the relay it starts
// reaches the run's socket from inside its sandbox.
func TestRunOffersMCP(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"plain", "sandbox-agent", "sandbox-agent-hosts"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws, outside := t.TempDir(), t.TempDir()
			prompt := "echo via-mcp > inside && cat inside && echo out > " + filepath.Join(outside, "f")
			args := []string{"run", "--mcp", "--format", "json", "--approve-all", "--cwd", ws, "-p", prompt}
			switch name {
			case "sandbox-agent":
				args = append(args, "--sandbox-agent")
			case "sandbox-agent-hosts":
				// The network limited to a list, as a named agent's is by
				// default: its sandbox makes no unix socket, so the relay
				// is given the run's loopback port, forwarded in.
				args = append(args, "--sandbox-agent", "--allow-host", "example.com")
			}
			r := acpterm(t, opts{env: []string{fakeAgentEnv + "=mcpclient"}, bound: 60 * time.Second},
				append(args, "--", testExe(t))...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "RESULT") {
				t.Fatalf("no tool result in the run's output:\n%s\n%s", r.stdout, r.stderr)
			}
			if name == "sandbox-agent-hosts" {
				mustContain(t, "stdout", r.stdout, `\"args\":[\"mcp\",\"--connect\",\"127.0.0.1:`)
			}
			mustContain(t, "stdout", r.stdout, `\"command\":`, `\"args\":[\"mcp\",\"--connect\",`,
				`\"env\":[{\"name\":\"ACPTERM_MCP_TOKEN\"`, "via-mcp", "Read-only file system")
			if strings.Contains(r.stdout, `\"type\":`) {
				t.Errorf("the stdio entry has a type:\n%s", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(outside, "f")); !os.IsNotExist(err) {
				t.Errorf("the write outside: %v", err)
			}
			// The run showed the command as one of its terminals.
			if created := ofKind(parseEvents(t, r.stdout), "terminal_created"); len(created) != 1 {
				t.Errorf("terminal_created events %v, want the MCP command's", created)
			}
		})
	}
}
