//go:build linux

package mcpexec_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// benchClient serves terminals with a Manager, as an ACP client does.
type benchClient struct{ *terminal.Manager }

func (benchClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return nil, errors.New("not used")
}
func (benchClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

type benchAgent struct{}

func (benchAgent) Initialize(_ context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: req.ProtocolVersion}, nil
}
func (benchAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return nil, errors.New("not used")
}
func (benchAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return nil, errors.New("not used")
}
func (benchAgent) Cancel(context.Context, *acp.CancelNotification) error { return nil }

// BenchmarkExecRoundTrip runs one command, `echo hi`, both ways in one
// loop, alternating: as an agent runs it through a client's terminals
// (terminal/create, wait_for_exit, output, release over an ACP
// connection) and as a model runs it through this server (one tools/call
// of exec_command). Both sandboxed with workspace-write on a runtime
// whose sandbox helper has started (a first command of each before the
// loop); in-memory pipes for both connections. It reports the median of
// each and of their difference (mcp minus acp), per command.
func BenchmarkExecRoundTrip(b *testing.B) {
	ws := b.TempDir()
	topts := func() *terminal.Options {
		return &terminal.Options{DefaultCwd: ws, Policy: &terminal.Policy{Roots: []string{ws},
			Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{ws}, WithoutMountNamespace: true}}}
	}
	// ACP: an agent's connection to a client that embeds a Manager.
	m := terminal.NewManager(topts())
	defer m.Close()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	cc := acp.NewClientConn(benchClient{m}, clientIn, clientOut, nil)
	defer cc.Close()
	ac := acp.NewAgentConn(benchAgent{}, agentIn, agentOut, nil)
	defer ac.Close()
	ctx := ctxFor(b)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		b.Fatal(err)
	}
	viaACP := func() time.Duration {
		start := time.Now()
		term, err := ac.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "echo hi", Cwd: &ws})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := term.WaitForExit(ctx); err != nil {
			b.Fatal(err)
		}
		out, err := term.Output(ctx)
		if err != nil || out.Output != "hi\n" {
			b.Fatalf("output %+v, %v", out, err)
		}
		if err := term.Release(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// MCP: a host's connection to this server.
	c := startServer(b, &mcpexec.Options{Cwd: ws, Terminal: topts()})
	viaMCP := func() time.Duration {
		start := time.Now()
		var r toolResult
		if err := c.call(ctx, "tools/call", map[string]any{"name": "exec_command", "arguments": map[string]any{"cmd": "echo hi"}}, &r); err != nil {
			b.Fatal(err)
		}
		if !strings.HasSuffix(r.text(), "Output:\nhi\n") {
			b.Fatalf("answer %q", r.text())
		}
		return time.Since(start)
	}
	// The helpers' start, and the first command's costs, are not measured.
	viaACP()
	viaMCP()
	var acpMs, mcpMs, diff []float64
	for b.Loop() {
		a := viaACP()
		p := viaMCP()
		acpMs = append(acpMs, ms(a))
		mcpMs = append(mcpMs, ms(p))
		diff = append(diff, ms(p-a))
	}
	b.ReportMetric(median(acpMs), "acp-ms/op")
	b.ReportMetric(median(mcpMs), "mcp-ms/op")
	b.ReportMetric(median(diff), "mcp-minus-acp-ms/op")
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
