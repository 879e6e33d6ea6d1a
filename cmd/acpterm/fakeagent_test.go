package main

import (
	"context"
	"encoding/json"
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
//   - stubborn: starts `sleep 30` and ignores session/cancel;
//   - display: runs "make test" itself and streams it through the
//     _meta.terminal_output display extension, if the client offers it;
//   - background: starts `sleep 1000` in a client terminal and ends the
//     turn without releasing it (backgrounder).
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
	case "display":
		return serveAgent(&displayer{})
	case "crash", "stubborn":
		return serveAgent(&sleeper{mode: mode})
	case "background":
		return serveAgent(&backgrounder{exited: make(chan string, 1)})
	}
	if run, ok := hostileAgents[mode]; ok {
		return run()
	}
	fmt.Fprintf(os.Stderr, "fake agent: unknown mode %q\n", mode)
	return 2
}

// sleeper runs `sleep 30` in a client terminal, then crashes or hangs.
type sleeper struct {
	mode string
	conn *acp.AgentConn // set by SetConn before serving
}

func (a *sleeper) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *sleeper) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}, nil
}

func (a *sleeper) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_sleeper"}, nil
}

func (a *sleeper) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

func (a *sleeper) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	term, err := a.conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "sleep 30"})
	if err != nil {
		return nil, err
	}
	call := acp.NewTerminalToolCall("call_sleep", "sleep 30", term.ID)
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}
	if a.mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake agent: crashing now")
		os.Exit(7)
	}
	<-a.conn.Done() // deaf to session/cancel
	return nil, ctx.Err()
}

// displayer plays an agent that runs its commands itself and shows them in
// the client through Zed's display-only terminal _meta.
type displayer struct {
	conn    *acp.AgentConn // set by SetConn before serving
	offered atomic.Bool
}

func (a *displayer) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *displayer) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	if req.ClientCapabilities != nil && string(req.ClientCapabilities.Meta["terminal_output"]) == "true" {
		a.offered.Store(true)
	}
	return &acp.InitializeResponse{ProtocolVersion: fakeVersion(req)}, nil
}

func (a *displayer) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_display"}, nil
}

func (a *displayer) Cancel(ctx context.Context, n *acp.CancelNotification) error { return nil }

func (a *displayer) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	if !a.offered.Load() {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "the client did not offer _meta.terminal_output"}
	}
	meta := func(key, value string) acp.Meta { return acp.Meta{key: json.RawMessage(value)} }
	const tid = `"agent-term-1"`
	inProgress, completed := acp.ToolCallStatusInProgress, acp.ToolCallStatusCompleted
	updates := []acp.SessionUpdate{
		&acp.ToolCall{ToolCallID: "call_make", Title: "make test", Kind: acp.ToolKindExecute, Status: inProgress,
			Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "agent-term-1"}},
			Meta:    meta("terminal_info", `{"terminal_id":`+tid+`,"cwd":"/work"}`)},
		&acp.ToolCallUpdate{ToolCallID: "call_make", Meta: meta("terminal_output", `{"terminal_id":`+tid+`,"data":"building…\n"}`)},
		&acp.ToolCallUpdate{ToolCallID: "call_make", Meta: meta("terminal_output", `{"terminal_id":`+tid+`,"data":"ok 3 tests\n"}`)},
		&acp.ToolCallUpdate{ToolCallID: "call_make", Status: &completed,
			Meta: meta("terminal_exit", `{"terminal_id":`+tid+`,"exit_code":0,"signal":null}`)},
	}
	for _, u := range updates {
		if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u}); err != nil {
			return nil, err
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// bgMarkEnv names the variable whose value backgrounder passes to its
// `sleep 1000` as ACPTERM_BG_SLEEP, so that a test finds that process,
// and no other, in /proc.
const bgMarkEnv = "ACPTERM_E2E_BG_MARK"

// backgrounder plays an agent that leaves work running after its turn (a
// dev server, a watcher): "start" runs `sleep 1000` in a client terminal
// under an open tool call and ends the turn; it waits for the command's
// exit meanwhile, and "status" answers with what it saw (waiting for it).
type backgrounder struct {
	baseAgent
	exited chan string // the exit status of the sleep, once
}

func (a *backgrounder) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_bg"}, nil
}

func (a *backgrounder) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	if start, resp, err := statusOrStart(ctx, conn, req, a.exited, "the sleep"); !start {
		return resp, err
	}
	term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "sleep", Args: []string{"1000"},
		Env: []acp.EnvVariable{{Name: "ACPTERM_BG_SLEEP", Value: os.Getenv(bgMarkEnv)}}})
	if err != nil {
		return nil, err
	}
	call := acp.NewTerminalToolCall("call_sleep", "sleep 1000", term.ID)
	if err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}
	// The wait outlives the turn: it ends with the command, or with the
	// connection.
	waitCtx, stop := context.WithCancel(context.Background())
	go func() {
		defer stop()
		select {
		case <-conn.Done():
		case <-waitCtx.Done():
		}
	}()
	go func() {
		defer stop()
		st, err := term.WaitForExit(waitCtx)
		if err == nil {
			a.exited <- acp.TerminalExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}.String()
		}
	}()
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, agentSay(ctx, conn, req.SessionID, "started sleep 1000")
}

// fakeVersion is the protocol version a fake agent answers: 1 when the
// client offers it terminals in v1, which the fakes run their commands in
// (v2 has none), else the version asked for, as the acp SDK's agents and
// acpterm's shell agent do.
func fakeVersion(req *acp.InitializeRequest) acp.ProtocolVersion {
	if req.ClientCapabilities != nil && req.ClientCapabilities.Terminal {
		return acp.ProtocolVersion1
	}
	return req.ProtocolVersion
}

// statusOrStart answers the background agents' prompts but "start"
// (start true): "status" says how the background command (what) ended,
// once it has; anything else asks for one of the two.
func statusOrStart(ctx context.Context, conn *acp.AgentConn, req *acp.PromptRequest, exited <-chan string, what string) (start bool, resp *acp.PromptResponse, err error) {
	say := func(text string) error { return agentSay(ctx, conn, req.SessionID, text) }
	switch promptText(req) {
	case "start":
		return true, nil, nil
	case "status":
		select {
		case st := <-exited:
			logCall("exit:%s", st)
			return false, &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, say(what + " ended: " + st)
		case <-ctx.Done():
			return false, nil, ctx.Err()
		}
	}
	return false, &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, say("say start or status")
}

// agentSay sends text, a line, as the agent's message in session sid.
func agentSay(ctx context.Context, conn *acp.AgentConn, sid acp.SessionID, text string) error {
	return conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid,
		Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text + "\n"}}})
}
