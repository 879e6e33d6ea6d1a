package client

import (
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// Exit statuses of `acpterm run` (and demo). They are the one place these
// numbers are defined; the help text and the README list them.
const (
	// ExitOK: the turn ended with stopReason end_turn.
	ExitOK = 0
	// ExitFailure: acpterm itself failed (an I/O error, not the agent's fault).
	ExitFailure = 1
	// ExitUsage: bad command line, flags or prompt.
	ExitUsage = 2
	// ExitAgent: the agent could not be started, crashed or exited mid-turn,
	// did not answer initialize in time, or broke the protocol.
	ExitAgent = 3
	// ExitRefusal: the turn ended with stopReason refusal.
	ExitRefusal = 4
	// ExitLimit: the turn ended with stopReason max_tokens or max_turn_requests.
	ExitLimit = 5
	// ExitConfined: the turn ended normally, but every command the agent
	// ran in it failed because of acpterm's sandbox (a write outside the
	// writable paths, a sandbox of the agent's own that cannot start
	// inside acpterm's): the agent could not do its job, and says so
	// perhaps only in words.
	ExitConfined = 6
	// ExitTimeout: --turn-timeout cancelled the turn (and killed the agent
	// if it did not stop within the cancel grace). 124 is what timeout(1)
	// exits with, so scripts already know it; it differs from 130 so that
	// a slow agent is not taken for a user's Ctrl-C.
	ExitTimeout = 124
	// ExitCancelled: the turn was cancelled (Ctrl-C, SIGTERM), as shells
	// report a SIGINT death (128+2).
	ExitCancelled = 130
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
// texts are made from it, and a test holds the README's table to it.
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
