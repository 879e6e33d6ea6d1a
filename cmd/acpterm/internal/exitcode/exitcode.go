// Package exitcode holds the exit statuses of acpterm's commands, the one
// place these numbers are defined: the client package names them
// (client.ExitOK, …) for `acpterm run` and demo, and the login package
// returns them for `acpterm login`. The help text and docs/cli.md list
// them.
package exitcode

const (
	// OK: the turn ended with stopReason end_turn (login: logged in).
	OK = 0
	// Failure: acpterm itself failed (an I/O error, not the agent's fault).
	Failure = 1
	// Usage: bad command line, flags or prompt.
	Usage = 2
	// Agent: the agent could not be started, crashed or exited mid-turn,
	// did not answer initialize in time, or broke the protocol.
	Agent = 3
	// Refusal: the turn ended with stopReason refusal.
	Refusal = 4
	// Limit: the turn ended with stopReason max_tokens or max_turn_requests.
	Limit = 5
	// Confined: the turn ended normally, but every command the agent
	// ran in it failed because of acpterm's sandbox (a write outside the
	// writable paths, a sandbox of the agent's own that cannot start
	// inside acpterm's): the agent could not do its job, and says so
	// perhaps only in words.
	Confined = 6
	// Timeout: --turn-timeout cancelled the turn (and killed the agent
	// if it did not stop within the cancel grace). 124 is what timeout(1)
	// exits with, so scripts already know it; it differs from 130 so that
	// a slow agent is not taken for a user's Ctrl-C.
	Timeout = 124
	// Cancelled: the turn was cancelled (Ctrl-C, SIGTERM), as shells
	// report a SIGINT death (128+2).
	Cancelled = 130
)
