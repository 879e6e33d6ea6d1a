package client

import (
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestToolTiesJobs: the second created event that ties a terminal to a
// tool call (which may come after the command ended, when the tool call
// came late) starts no job again.
func TestToolTiesJobs(t *testing.T) {
	j := newJobsDriver(FormatText)
	j.r.TerminalEvent(created("mcp_t1", "echo hi"))
	j.r.TerminalEvent(exited("mcp_t1", 0))
	tied := created("mcp_t1", "echo hi")
	tied.Info.ToolCall = "toolu_1"
	j.r.TerminalEvent(tied)
	if got := running(j); got != "" {
		t.Errorf("jobs running:\n%s\nwant none", got)
	}
	j.r.Finish(acp.StopReasonEndTurn)
}
