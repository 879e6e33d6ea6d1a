package probe

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// Case describes one check of the suite.
type Case struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Rule is what the client is expected to do, in one line.
	Rule string `json:"rule"`
	// Normative cases check what the ACP specification asks of a client
	// and pass or fail; the others record a convention and end in info.
	Normative bool `json:"normative"`
}

// Cases lists the suite in the order it runs.
func Cases() []Case {
	out := make([]Case, len(suite))
	for i, c := range suite {
		out[i] = c.Case
	}
	return out
}

type probeCase struct {
	Case
	run func(ctx context.Context, t *tester) verdict
}

// maxObserved bounds CaseResult.Observed in bytes. Observations quote what
// the client answered (output, error messages), which may be as long as a
// message may be; the report keeps every case's, and sends each in a tool
// call and all of them in the closing message. What the case says comes
// first, so the head is kept.
const maxObserved = 1024

// result makes the case's report entry. An informational case reports
// what it saw and can neither pass nor fail.
func (c *probeCase) result(r Result, observed string, d time.Duration) CaseResult {
	if !c.Normative && (r == ResultPass || r == ResultFail) {
		r = ResultInfo
	}
	if len(observed) > maxObserved {
		observed = utf8cut.Head(observed, maxObserved) + "…"
	}
	return CaseResult{
		ID: c.ID, Title: c.Title, Rule: c.Rule, Normative: c.Normative,
		Result: r, Observed: observed, DurationMs: d.Milliseconds(),
	}
}

// The suite. Normative cases come first; within each group, the simple
// lifecycle before the edge cases, so that a client broken at the basics
// shows it in the first lines.
var suite = []*probeCase{
	{Case{"create-returns-immediately", "create returns while the command runs",
		"terminal/create answers with a terminal id at once, without waiting for the command to finish", true},
		caseCreateReturnsImmediately},
	{Case{"output-while-running", "output answers while the command runs",
		"terminal/output returns the output so far without waiting for exit, and no exitStatus while the command runs", true},
		caseOutputWhileRunning},
	{Case{"exit-status-zero", "finished command: output and exit code 0",
		"after exit, wait_for_exit gives exitCode 0 and terminal/output holds the whole output with exitStatus.exitCode 0", true},
		caseExitStatusZero},
	{Case{"exit-code-nonzero", "exit code 3 is reported",
		"a command that exits with 3 is reported with exitCode 3 by wait_for_exit and terminal/output", true},
		caseExitCodeNonzero},
	{Case{"stdout-and-stderr", "stdout and stderr are both captured",
		"the terminal output holds what the command writes to stdout and to stderr", true},
		caseStdoutAndStderr},
	{Case{"args-verbatim", "args reach the command unchanged",
		"with args, each argument reaches the command as is: not re-split, not expanded by a shell", true},
		caseArgsVerbatim},
	{Case{"env-var", "requested env var is set",
		"a variable from the request's env is visible to the command with its exact value", true},
		caseEnvVar},
	{Case{"cwd-absolute", "requested cwd is used",
		"the command runs in the absolute cwd of the request", true},
		caseCwdAbsolute},
	{Case{"tail-truncation-utf8", "truncation at a UTF-8 boundary",
		"with outputByteLimit N the output keeps at most N bytes, cut forward to a character start: valid UTF-8, a suffix of the full output, truncated true", true},
		caseTailTruncationUTF8},
	{Case{"truncation-keeps-end", "truncation keeps the end",
		"when output exceeds outputByteLimit, the beginning is dropped and the newest output kept", true},
		caseTruncationKeepsEnd},
	{Case{"output-limit-zero", "outputByteLimit 0 keeps nothing",
		"with outputByteLimit 0 no output is retained: output is empty and truncated is true", true},
		caseOutputLimitZero},
	{Case{"kill-keeps-terminal", "kill keeps the terminal valid",
		"terminal/kill stops the command without releasing it: output and wait_for_exit still answer, with an exit status", true},
		caseKillKeepsTerminal},
	{Case{"wait-after-exit", "wait_for_exit after exit, repeatedly",
		"wait_for_exit on a command that has exited answers at once with the same status every time", true},
		caseWaitAfterExit},
	{Case{"concurrent-waits", "three waits at once",
		"several wait_for_exit requests may be pending on one terminal; all answer with the same status, and output answers meanwhile", true},
		caseConcurrentWaits},
	{Case{"release-invalidates-id", "release invalidates the id",
		"after terminal/release, output, wait_for_exit and kill on that terminal id answer with an error", true},
		caseReleaseInvalidatesID},
	{Case{"release-stops-command", "release stops a running command",
		"terminal/release kills the command if it still runs", true},
		caseReleaseStopsCommand},
	{Case{"unknown-terminal-id", "unknown terminal id is an error",
		"output, wait_for_exit, kill and release on a terminal id the client never issued answer with an error", true},
		caseUnknownTerminalID},
	{Case{"stdin-no-hang", "a command reading stdin ends",
		"commands get no interactive input: one that reads stdin sees end of input and ends", true},
		caseStdinNoHang},
	{Case{"wait-ignores-grandchild", "wait_for_exit does not wait for a background grandchild",
		"wait_for_exit answers when the command exits, even if a background process it started still holds the output pipe", true},
		caseWaitIgnoresGrandchild},
	{Case{"signal-reported", "a signal death is reported as a signal",
		"a command killed by a signal is reported with the signal set (an exitCode alongside is tolerated)", true},
		caseSignalReported},

	{Case{"shell-line", "args-less command is a shell line",
		"convention: a command without args is run by a shell (many agents send whole shell lines)", false},
		caseShellLine},
	{Case{"signal-name-posix", "signal names are POSIX style",
		"convention: the signal is named like \"SIGTERM\" (as ACP v2 recommends), not \"Terminated\" or \"killed\"", false},
		caseSignalNamePOSIX},
	{Case{"signal-exit-code-null", "no exit code for a signal death",
		"convention: exitCode is null when a signal ended the command", false},
		caseSignalExitCodeNull},
	{Case{"wait-cancel", "a wait can be cancelled",
		"convention: $/cancel_request on a pending wait_for_exit gets a -32800 answer and leaves the command running", false},
		caseWaitCancel},
	{Case{"release-resolves-wait", "release answers a pending wait",
		"convention: a wait_for_exit pending when the terminal is released is answered, with the final status", false},
		caseReleaseResolvesWait},
	{Case{"kill-process-group", "kill reaches the command's children",
		"convention: terminal/kill stops the whole process group, not just the direct child", false},
		caseKillProcessGroup},
	{Case{"env-defaults", "pager and prompt defaults",
		"convention: PAGER=cat, GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0 unless the request sets them, since nobody can answer a pager", false},
		caseEnvDefaults},
	{Case{"cwd-default", "no cwd means the session cwd",
		"convention: a create without cwd runs in the session's cwd", false},
		caseCwdDefault},
	{Case{"cwd-relative", "relative cwd is rejected",
		"convention: a relative cwd (the spec requires absolute) is refused with an error", false},
		caseCwdRelative},
	{Case{"session-scoped-ids", "terminal ids are scoped to their session",
		"convention: a terminal id used with another sessionId is unknown, with the same error as any unknown id", false},
		caseSessionScopedIDs},
	{Case{"write-outside-cwd", "a command writing in $HOME",
		"report: whether a command may create a file in $HOME, outside the session cwd (a sandboxing client denies it)", false},
		caseWriteOutsideCwd},
	{Case{"write-outside-tmpdir", "a command writing in TMPDIR and /tmp",
		"report: the command's TMPDIR, and whether it may write there and in /tmp itself", false},
		caseWriteOutsideTmpdir},
	{Case{"loopback-reach", "a command connecting to the host's loopback",
		"report: whether a command reaches a TCP listener the agent opens on 127.0.0.1", false},
		caseLoopback},
}

// runToEnd creates a terminal, waits for it and reads its output.
func runToEnd(ctx context.Context, t *tester, req *acp.CreateTerminalRequest) (*acp.WaitForTerminalExitResponse, *acp.TerminalOutputResponse, error) {
	id, err := t.create(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	st, err := t.wait(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	out, err := t.output(ctx, id)
	if err != nil {
		return st, nil, err
	}
	return st, out, nil
}

// selfTerm runs a shell that kills itself with SIGTERM.
func selfTerm(ctx context.Context, t *tester) (*acp.WaitForTerminalExitResponse, *acp.TerminalOutputResponse, error) {
	return runToEnd(ctx, t, t.sh("kill -TERM $$"))
}

// lf undoes the CRLF line ends of clients that run commands in a
// pseudo-terminal, which are not a fault: comparisons look at the text.
func lf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func asACPError(err error, target **acp.Error) bool { return err != nil && errors.As(err, target) }
