package client

import "github.com/acpterm/acpterm/acp"

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
