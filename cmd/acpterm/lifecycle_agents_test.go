package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// The fake agents of the lifecycle tests (lifecycle_e2e_test.go): how an
// agent ends, and what acpterm shows of it.

func init() {
	registerHostile("exit-orphan", func() int { return serveAgent(&orphanAgent{}) })
	registerHostile("linger-term", func() int { return lingerAgent(false) })
	registerHostile("ignore-term", func() int { return lingerAgent(true) })
}

// orphanAgent starts `sleep 1000` on its own stdout and stderr in the
// turn, says the sleep's pid on stderr, and exits with status 9 without
// answering: its stdout never ends while the sleep lives.
type orphanAgent struct{ baseAgent }

func (a *orphanAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	if err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
		Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "starting a child\n"}}}); err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 & echo \"fake agent: sleep pid $!\" >&2")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
	}
	fmt.Fprintf(os.Stderr, "fake agent: exiting at %d\n", time.Now().UnixNano())
	os.Exit(9)
	return nil, nil
}

// replyAgent answers the turn with a message and a usage update.
type replyAgent struct{ baseAgent }

// lingerReply is the reply replyAgent sends.
const lingerReply = "the reply of the lingering agent"

func (a *replyAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	c := a.conn.Load()
	for _, u := range []acp.SessionUpdate{
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: lingerReply + "\n"}},
		&acp.UsageUpdate{Used: 1234, Size: 200000},
	} {
		if err := c.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u}); err != nil {
			return nil, err
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// lingerAgent serves replyAgent and, as codex and claude do, does not exit
// when its stdin ends. On SIGTERM it says so on stderr and exits, or, when
// stubborn, says so and stays until SIGKILL.
func lingerAgent(stubborn bool) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	a := &replyAgent{}
	conn := acp.NewAgentConn(a, os.Stdin, os.Stdout, nil)
	<-conn.Done()
	for range sigs {
		if !stubborn {
			fmt.Fprintln(os.Stderr, "fake agent: SIGTERM, exiting")
			return 0
		}
		fmt.Fprintln(os.Stderr, "fake agent: SIGTERM, staying")
	}
	return 0
}
