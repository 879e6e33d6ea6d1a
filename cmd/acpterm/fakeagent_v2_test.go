package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

func init() {
	registerHostile("background-local", func() int {
		m := terminal.NewManager(&terminal.Options{KillGrace: 2 * time.Second})
		defer m.Close()
		return serveAgent(&localBackgrounder{terms: m, exited: make(chan string, 1)})
	})
}

// localBackgrounder is the dev server of ACP v2: "start" runs `sleep
// 1000` in the agent's own terminal runtime (display.RunLocalCommand, as
// a display terminal) and ends the turn while it runs; on a v2 connection
// the terminal advertises capabilities.cancel and stays in the background
// list of every state update until it exits. "status" says how it ended.
// The sleep carries ACPTERM_BG_SLEEP=$ACPTERM_E2E_BG_MARK, for
// markedProcesses.
type localBackgrounder struct {
	baseAgent
	terms  *terminal.Manager
	exited chan string // the sleep's exit status, once
	wg     sync.WaitGroup
}

func (a *localBackgrounder) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_dev"}, nil
}

func (a *localBackgrounder) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	if start, resp, err := statusOrStart(ctx, conn, req, a.exited, "the dev server"); !start {
		return resp, err
	}
	// The command outlives the turn: it runs on the connection's life, and
	// the turn ends once its stream has begun (the announcement is out,
	// so the turn's last state update lists it).
	life, stop := context.WithCancel(context.Background())
	go func() {
		defer stop()
		<-conn.Done()
	}()
	streaming, failed := make(chan struct{}), make(chan error, 1)
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	terms := &announced{Manager: a.terms, streaming: streaming}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer stop()
		res, err := display.RunLocalCommand(life, conn, terms, &acp.CreateTerminalRequest{SessionID: req.SessionID,
			Command: "sleep", Args: []string{"1000"}, Cwd: &cwd,
			Env: []acp.EnvVariable{{Name: "ACPTERM_BG_SLEEP", Value: os.Getenv(bgMarkEnv)}}},
			&display.LocalCommandOptions{CommandOptions: display.CommandOptions{Title: "dev server: sleep 1000"}})
		if err != nil {
			failed <- err
			return
		}
		a.exited <- res.ExitStatus.String()
	}()
	select {
	case <-streaming:
	case err := <-failed:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, agentSay(ctx, conn, req.SessionID, "started the dev server")
}

// announced is the agent's terminal runtime, telling when RunLocalCommand
// waits for the exit: it has announced the terminal by then.
type announced struct {
	*terminal.Manager
	streaming chan struct{}
	once      sync.Once
}

func (t *announced) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	t.once.Do(func() { close(t.streaming) })
	return t.Manager.WaitForTerminalExit(ctx, req)
}

func init() { registerHostile("v1only", v1OnlyAgent) }

// v1OnlyAgent speaks ACP v1 alone, as agents written before v2 do: it
// answers initialize with protocolVersion 1 whatever it is offered, then
// a session and one-line turns, by hand (the SDK's AgentConn would serve
// v2 when asked).
func v1OnlyAgent() int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		answer := func(result any) {
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		}
		switch m.Method {
		case "initialize":
			answer(map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}})
		case "session/new":
			answer(map[string]any{"sessionId": "sess_v1only"})
		case "session/prompt":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess_v1only",
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "spoken in v1"}}}})
			answer(map[string]any{"stopReason": "end_turn"})
		default:
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
	return 0
}
