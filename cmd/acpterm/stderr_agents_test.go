package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/acpterm/acpterm/acp"
)

// The fake agent of the agent-stderr tests (stderr_pty_linux_test.go and
// TestAgentStderrFlags): it shows a tool call, writes FAKE_STDERR_LINES
// lines on stderr, then replies, or, with FAKE_STDERR_FAIL set, exits
// with status 4 mid-turn.
func init() {
	registerHostile("stderr", func() int { return serveAgent(&stderrAgent{}) })
}

const (
	fakeStderrLines = "FAKE_STDERR_LINES"
	fakeStderrFail  = "FAKE_STDERR_FAIL"
	// stderrReply is the agent's reply.
	stderrReply = "the reply after the tool call"
)

type stderrAgent struct{ baseAgent }

func (a *stderrAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	c := a.conn.Load()
	done := acp.ToolCallStatusCompleted
	if err := c.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
		Update: &acp.ToolCall{ToolCallID: "call_1", Title: "look around", Kind: acp.ToolKindRead, Status: done}}); err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(os.Getenv(fakeStderrLines))
	for i := 1; i <= n; i++ {
		// An escape sequence in each: it must be shown escaped.
		fmt.Fprintf(os.Stderr, "agent log line %d \x1b[2J\n", i)
	}
	if os.Getenv(fakeStderrFail) != "" {
		os.Exit(4)
	}
	if err := c.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
		Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: stderrReply + "\n"}}}); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
