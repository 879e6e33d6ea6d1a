package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
)

// fakeAgentEnv names the mode in which the test binary, re-executed by
// `acpterm run`, plays a misbehaving agent.
const fakeAgentEnv = "ACPTERM_E2E_FAKE_AGENT"

// fakeAgent runs one mode and returns the exit status:
//   - garbage: a banner on stdout instead of JSON-RPC, then waits;
//   - exit: dies at once with status 5;
//   - silent: reads its stdin and never answers;
//   - crash: starts `sleep 30` in a terminal, shows it, and exits 7 mid-turn;
//   - stubborn: starts `sleep 30` and ignores session/cancel.
func fakeAgent(mode string) int {
	switch mode {
	case "garbage":
		fmt.Println("Hello! I am not an ACP agent.")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "fake agent: giving up")
		return 5
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "crash", "stubborn":
		a := &sleeper{mode: mode}
		conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, nil)
		a.conn.Store(conn)
		<-conn.Done()
		conn.Close()
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake agent: unknown mode %q\n", mode)
	return 2
}

// sleeper runs `sleep 30` in a client terminal, then crashes or hangs.
type sleeper struct {
	mode string
	// conn is set after the connection starts serving: atomic, since a
	// handler may already be running.
	conn atomic.Pointer[acp.AgentConn]
}

func (a *sleeper) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *sleeper) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_sleeper"}, nil
}

func (a *sleeper) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

func (a *sleeper) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	term, err := a.conn.Load().CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "sleep 30"})
	if err != nil {
		return nil, err
	}
	call := acp.NewTerminalToolCall("call_sleep", "sleep 30", term.ID)
	if err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}
	if a.mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake agent: crashing now")
		os.Exit(7)
	}
	<-a.conn.Load().Done() // deaf to session/cancel
	return nil, ctx.Err()
}
