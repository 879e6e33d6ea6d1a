package client

import (
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
)

// Exit statuses of `acpterm run` (and demo), as package exitcode defines
// them (where each is explained); the help text and docs/cli.md list them.
const (
	ExitOK        = exitcode.OK
	ExitFailure   = exitcode.Failure
	ExitUsage     = exitcode.Usage
	ExitAgent     = exitcode.Agent
	ExitRefusal   = exitcode.Refusal
	ExitLimit     = exitcode.Limit
	ExitConfined  = exitcode.Confined
	ExitTimeout   = exitcode.Timeout
	ExitCancelled = exitcode.Cancelled
)

// ExitCodeFor maps a stop reason to the exit status. A stop reason that is
// not in the v1 schema is a protocol error.
func ExitCodeFor(r acp.StopReason) int {
	switch r {
	case acp.StopReasonEndTurn:
		return ExitOK
	case acp.StopReasonRefusal:
		return ExitRefusal
	case acp.StopReasonMaxTokens, acp.StopReasonMaxTurnRequests:
		return ExitLimit
	case acp.StopReasonCancelled:
		return ExitCancelled
	}
	return ExitAgent
}

// ExitMeaning is one exit status and what it means, for help texts.
type ExitMeaning struct {
	Code    int
	Meaning string // a sentence for `acpterm help`
	Short   string // a few words for a one-line summary
}

// ExitMeanings lists every exit status of run and demo, in order. The help
// texts are made from it, and a test holds docs/cli.md's table to it.
var ExitMeanings = []ExitMeaning{
	{ExitOK, "the turn ended normally (stopReason end_turn)", "end_turn"},
	{ExitFailure, "acpterm itself failed", "acpterm failed"},
	{ExitUsage, "usage error: bad flags, no agent, no prompt", "usage"},
	{ExitAgent, "the agent failed: could not start, crashed or exited mid-turn, did not answer initialize in time, or broke the protocol", "the agent failed"},
	{ExitRefusal, "the agent refused (stopReason refusal)", "refusal"},
	{ExitLimit, "the agent hit a limit (stopReason max_tokens or max_turn_requests)", "max_tokens or max_turn_requests"},
	{ExitConfined, "every command the agent ran failed in acpterm's sandbox (the turn ended, the work was not done; stderr says what widens the sandbox)", "all commands failed in the sandbox"},
	{ExitTimeout, "the turn ran longer than --turn-timeout (cancelled, then killed)", "--turn-timeout"},
	{ExitCancelled, "cancelled by Ctrl-C or SIGTERM (stopReason cancelled)", "cancelled"},
}

// ExitTable is ExitMeanings as an indented table, wrapped at 76 columns,
// for `acpterm help`.
func ExitTable() string {
	var b strings.Builder
	for _, m := range ExitMeanings {
		b.WriteString(wrap(fmt.Sprintf("  %-4d %s", m.Code, m.Meaning), "       "))
	}
	return b.String()
}

// ExitSummary is ExitMeanings in one wrapped sentence, "Exit status: 0
// end_turn, 1 acpterm failed, …", for a command's help.
func ExitSummary() string {
	parts := make([]string, len(ExitMeanings))
	for i, m := range ExitMeanings {
		parts[i] = fmt.Sprintf("%d %s", m.Code, m.Short)
	}
	return wrap("Exit status: "+strings.Join(parts, ", ")+".", "")
}

// wrap breaks line at spaces so that no line is longer than 76 columns,
// starting each continuation with indent, and ends it with a newline.
func wrap(line, indent string) string {
	const width = 76
	var b strings.Builder
	for len(line) > width {
		cut := strings.LastIndexByte(line[:width], ' ')
		if cut <= len(indent) {
			break
		}
		b.WriteString(line[:cut] + "\n")
		line = indent + line[cut+1:]
	}
	b.WriteString(line + "\n")
	return b.String()
}
