package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// finishTimeout bounds the kill, output and release calls with which
// RunCommand ends a command, even when its ctx was cancelled.
const finishTimeout = 10 * time.Second

// CommandOptions tunes RunCommand. A nil *CommandOptions means defaults.
type CommandOptions struct {
	// ToolCallID names the tool call; empty means a random "call_" id.
	ToolCallID ToolCallID
	// Title is the tool call's title; empty means the command line.
	Title string
	// Timeout bounds the wait for the command; on expiry it is killed and
	// the result says TimedOut. Zero means no timeout.
	Timeout time.Duration
}

// CommandResult is how a command run by RunCommand ended.
type CommandResult struct {
	ToolCallID ToolCallID
	TerminalID TerminalID
	// ExitCode is set for a normal exit, Signal for a signalled one; a
	// client may set both (some report a signal with exit code 1).
	ExitCode *uint32
	Signal   *string
	// Output is the retained output, the tail when Truncated.
	Output    string
	Truncated bool
	// TimedOut reports that CommandOptions.Timeout expired and the command
	// was killed.
	TimedOut bool
}

// Succeeded reports a zero exit code without a timeout or a signal.
func (r *CommandResult) Succeeded() bool {
	return r.ExitCode != nil && *r.ExitCode == 0 && r.Signal == nil && !r.TimedOut
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
//     exit status in rawOutput and the terminal still embedded;
//  7. terminal/release.
//
// If ctx is cancelled while the command runs (say, on session/cancel), the
// command is killed, the tool call is marked failed, the terminal released,
// and RunCommand returns the partial result with ctx's error. Those closing
// calls run on a context detached from ctx and bounded in time.
func (a *AgentConn) RunCommand(ctx context.Context, req *CreateTerminalRequest, opts *CommandOptions) (*CommandResult, error) {
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
	call := NewTerminalToolCall(res.ToolCallID, title, term.ID)
	call.RawInput, _ = json.Marshal(struct {
		Command string   `json:"command"`
		Args    []string `json:"args,omitempty"`
		Cwd     *string  `json:"cwd,omitempty"`
	}{req.Command, req.Args, req.Cwd})
	if err := a.SessionUpdate(ctx, &SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}

	waitCtx, cancelWait := ctx, context.CancelFunc(func() {})
	if opts.Timeout > 0 {
		waitCtx, cancelWait = context.WithTimeout(ctx, opts.Timeout)
	}
	st, err := term.WaitForExit(waitCtx)
	cancelWait()

	finish, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancelFinish()
	cancelled := ctx.Err() != nil
	if err != nil && (cancelled || errors.Is(err, context.DeadlineExceeded)) {
		res.TimedOut = !cancelled
		if kerr := term.Kill(finish); kerr != nil {
			return res, kerr
		}
		st, err = term.WaitForExit(finish)
	}
	if err != nil {
		a.failToolCall(finish, req.SessionID, res, &commandRawOutput{Cancelled: cancelled})
		return res, err
	}
	res.ExitCode, res.Signal = st.ExitCode, st.Signal

	out, err := term.Output(finish)
	if err != nil {
		a.failToolCall(finish, req.SessionID, res, &commandRawOutput{ExitCode: res.ExitCode, Signal: res.Signal, Cancelled: cancelled})
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated

	status := ToolCallStatusCompleted
	if !res.Succeeded() || cancelled {
		status = ToolCallStatusFailed
	}
	update := TerminalToolCallUpdate(res.ToolCallID, status, term.ID)
	update.RawOutput, _ = json.Marshal(&commandRawOutput{
		ExitCode: res.ExitCode, Signal: res.Signal, Truncated: res.Truncated,
		TimedOut: res.TimedOut, Cancelled: cancelled,
	})
	if err := a.SessionUpdate(finish, &SessionNotification{SessionID: req.SessionID, Update: update}); err != nil {
		return res, err
	}
	if err := term.Release(finish); err != nil {
		return res, err
	}
	if cancelled {
		return res, ctx.Err()
	}
	return res, nil
}

// failToolCall marks the tool call failed after an error, best effort: the
// error that got us here is the one worth returning.
func (a *AgentConn) failToolCall(ctx context.Context, sid SessionID, res *CommandResult, raw *commandRawOutput) {
	update := TerminalToolCallUpdate(res.ToolCallID, ToolCallStatusFailed, res.TerminalID)
	update.RawOutput, _ = json.Marshal(raw)
	_ = a.SessionUpdate(ctx, &SessionNotification{SessionID: sid, Update: update})
}

// commandLine renders a request's command for a title.
func commandLine(req *CreateTerminalRequest) string {
	if len(req.Args) == 0 {
		return req.Command
	}
	return req.Command + " " + strings.Join(req.Args, " ")
}

func newToolCallID() ToolCallID {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return ToolCallID("call_" + hex.EncodeToString(b[:]))
}
