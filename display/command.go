package display

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// finishTimeout bounds the kill, output and release calls with which
// RunCommand ends a command, even when its ctx was cancelled.
const finishTimeout = 10 * time.Second

// DefaultOutputText is how many bytes of a command's final output the
// finished tool call carries as text when CommandOptions.OutputText is zero:
// enough for a test run's failures, little enough for a client to show.
const DefaultOutputText = 64 << 10

// CommandOptions tunes RunCommand. A nil *CommandOptions means defaults.
type CommandOptions struct {
	// ToolCallID names the tool call; empty means a random "call_" id.
	ToolCallID acp.ToolCallID
	// Title is the tool call's title; empty means the command line.
	Title string
	// Timeout bounds the wait for the command; on expiry it is killed and
	// the result says TimedOut. Zero means no timeout.
	Timeout time.Duration
	// OutputText bounds, in bytes, the tail of the final output that the
	// finished tool call carries as text content after the terminal, for
	// clients that do not show terminals (see RunCommand). Zero means
	// DefaultOutputText; negative leaves the text out.
	OutputText int
}

// CommandResult is how a command run by RunCommand ended.
type CommandResult struct {
	ToolCallID acp.ToolCallID
	TerminalID acp.TerminalID
	// ExitStatus is how the command ended, as the terminal reported it:
	// ExitCode for a normal exit, Signal for a signalled one; a client
	// may set both (some report a signal with exit code 1).
	ExitStatus acp.TerminalExitStatus
	// Output is the retained output, the tail when Truncated.
	Output    string
	Truncated bool
	// TimedOut reports that CommandOptions.Timeout expired and the command
	// was killed.
	TimedOut bool
	// Cancelled reports that RunCommand's ctx ended while the command ran,
	// and the command was killed.
	Cancelled bool
}

// Succeeded reports a zero exit code without a timeout, a cancel or a
// signal.
func (r *CommandResult) Succeeded() bool {
	st := r.ExitStatus
	return st.ExitCode != nil && *st.ExitCode == 0 && st.Signal == nil && !r.TimedOut && !r.Cancelled
}

// Status says in a few words how the command ended: its exit status as
// acp.TerminalExitStatus.String gives it, after "timed out, " or "cancelled, "
// when RunCommand killed it: "exit 0", "killed by SIGKILL", "timed out,
// killed by SIGTERM", "cancelled, killed by SIGTERM".
func (r *CommandResult) Status() string {
	s := r.ExitStatus.String()
	switch {
	case r.TimedOut:
		s = "timed out, " + s
	case r.Cancelled:
		s = "cancelled, " + s
	}
	return s
}

// commandRawOutput is the rawOutput of the final tool call update.
type commandRawOutput struct {
	ExitCode  *uint32 `json:"exitCode"`
	Signal    *string `json:"signal"`
	Truncated bool    `json:"truncated"`
	TimedOut  bool    `json:"timedOut,omitempty"`
	Cancelled bool    `json:"cancelled,omitempty"`
}

// RunCommand runs one command in the client's terminal from start to end,
// the way agents usually do it by hand:
//
//  1. check that the client advertised terminals (ErrNoTerminalCapability);
//  2. terminal/create;
//  3. announce a tool call (kind execute, status in_progress) embedding the
//     terminal, so the user watches it live;
//  4. terminal/wait_for_exit, killing the command if opts.Timeout expires;
//  5. terminal/output for the final output;
//  6. update the tool call: completed for a zero exit, else failed, with the
//     exit status in rawOutput, the terminal still embedded and, after it,
//     the output as text (below);
//  7. terminal/release.
//
// The text content is for clients that do not render terminals (acpx, a
// log), which would otherwise show nothing of what the command printed. It
// is the tail of the final output, at most opts.OutputText bytes (default
// DefaultOutputText) cut at a character start, in a fenced code block,
// then a line with the Status and, when the client's outputByteLimit or
// OutputText cut the output, how much of it is shown:
//
//	```
//	ok  	example.com/pkg	0.012s
//	```
//	exit 0
//
// It comes after the terminal so that a client that renders terminals can
// show the terminal and leave the text aside.
//
// If ctx is cancelled while the command runs (say, on session/cancel), the
// command is killed, the tool call is marked failed, the terminal released,
// and RunCommand returns the partial result with ctx's error. Those closing
// calls run on a context detached from ctx and bounded in time.
func RunCommand(ctx context.Context, a *acp.AgentConn, req *acp.CreateTerminalRequest, opts *CommandOptions) (*CommandResult, error) {
	if opts == nil {
		opts = &CommandOptions{}
	}
	term, err := a.CreateTerminal(ctx, req)
	if err != nil {
		return nil, err
	}
	defer term.Close()

	res := &CommandResult{ToolCallID: opts.ToolCallID, TerminalID: term.ID}
	if res.ToolCallID == "" {
		res.ToolCallID = newToolCallID()
	}
	title := opts.Title
	if title == "" {
		title = commandLine(req)
	}
	call := acp.NewTerminalToolCall(res.ToolCallID, title, term.ID)
	call.RawInput, _ = json.Marshal(struct {
		Command string   `json:"command"`
		Args    []string `json:"args,omitempty"`
		Cwd     *string  `json:"cwd,omitempty"`
	}{req.Command, req.Args, req.Cwd})
	if err := a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil && ctx.Err() == nil {
		return nil, err
	}
	// A cancel that ended the announcement may have come after it was
	// written: go on, so that the kill and the final update below happen
	// as for any cancel.

	waitCtx, cancelWait := ctx, context.CancelFunc(func() {})
	if opts.Timeout > 0 {
		waitCtx, cancelWait = context.WithTimeout(ctx, opts.Timeout)
	}
	st, err := term.WaitForExit(waitCtx)
	cancelWait()

	finish, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancelFinish()
	res.Cancelled = ctx.Err() != nil
	if err != nil && (res.Cancelled || errors.Is(err, context.DeadlineExceeded)) {
		res.TimedOut = !res.Cancelled
		if kerr := term.Kill(finish); kerr != nil {
			return res, kerr
		}
		st, err = term.WaitForExit(finish)
	}
	if err != nil {
		failToolCall(finish, a, req.SessionID, res, "the exit status could not be read: "+err.Error())
		return res, err
	}
	res.ExitStatus = exitStatus(st)

	out, err := term.Output(finish)
	if err != nil {
		failToolCall(finish, a, req.SessionID, res, res.Status()+"; the output could not be read: "+err.Error())
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated

	status := acp.ToolCallStatusCompleted
	if !res.Succeeded() {
		status = acp.ToolCallStatusFailed
	}
	update := acp.TerminalToolCallUpdate(res.ToolCallID, status, term.ID)
	update.RawOutput = res.rawOutput()
	if limit := outputTextLimit(opts.OutputText); limit >= 0 {
		update.Content = append(update.Content, acp.TextToolCallContent(outputText(res, limit)))
	}
	if err := a.SessionUpdate(finish, &acp.SessionNotification{SessionID: req.SessionID, Update: update}); err != nil {
		return res, err
	}
	if err := term.Release(finish); err != nil {
		return res, err
	}
	if res.Cancelled {
		return res, ctx.Err()
	}
	return res, nil
}

// rawOutput is the rawOutput of the final tool call update.
func (r *CommandResult) rawOutput() json.RawMessage {
	b, _ := json.Marshal(&commandRawOutput{
		ExitCode: r.ExitStatus.ExitCode, Signal: r.ExitStatus.Signal, Truncated: r.Truncated,
		TimedOut: r.TimedOut, Cancelled: r.Cancelled,
	})
	return b
}

// exitStatus is the exit status a terminal/wait_for_exit answer carries.
func exitStatus(w *acp.WaitForTerminalExitResponse) acp.TerminalExitStatus {
	return acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal}
}

// failToolCall marks the tool call failed after an error, best effort: the
// error that got us here is the one worth returning. The text says what is
// known, for clients that show no terminal.
func failToolCall(ctx context.Context, a *acp.AgentConn, sid acp.SessionID, res *CommandResult, text string) {
	update := acp.TerminalToolCallUpdate(res.ToolCallID, acp.ToolCallStatusFailed, res.TerminalID)
	update.RawOutput = res.rawOutput()
	update.Content = append(update.Content, acp.TextToolCallContent(text))
	_ = a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid, Update: update})
}

// outputTextLimit resolves CommandOptions.OutputText: -1 for no text.
func outputTextLimit(n int) int {
	switch {
	case n < 0:
		return -1
	case n == 0:
		return DefaultOutputText
	}
	return n
}

// outputText is the text content of a finished command: the last limit
// bytes of its output, fenced, and its status (see RunCommand).
func outputText(res *CommandResult, limit int) string {
	tail := utf8cut.Tail(res.Output, limit)
	var b strings.Builder
	if tail == "" {
		b.WriteString("(no output)\n")
	} else {
		fence := codeFence(tail)
		b.WriteString(fence + "\n" + tail)
		if !strings.HasSuffix(tail, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(fence + "\n")
	}
	b.WriteString(res.Status())
	if res.Truncated || len(tail) < len(res.Output) {
		// Whoever cut it, what is shown is the end of the output.
		fmt.Fprintf(&b, "; output truncated, the last %d bytes shown", len(tail))
	}
	return b.String()
}

// codeFence is a Markdown fence that text cannot close early: three
// backticks, or one more than the longest run of backticks in text.
func codeFence(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// commandLine is the request's command as acpterm shows it: a shell line
// as it is, an argv as a shell would read it back (textsafe.CommandLine).
func commandLine(req *acp.CreateTerminalRequest) string {
	return textsafe.CommandLine(req.Command, req.Args)
}

func newToolCallID() acp.ToolCallID {
	return acp.ToolCallID("call_" + randhex.String(8))
}
