// Package shellagent is acpterm's built-in ACP agent. It has no model behind
// it: each non-empty line of a prompt is a shell command, run in order
// through the client's terminals (one tool call per command, with the
// terminal embedded so the user watches it live, and the tail of its output
// as text for clients that show no terminal), and the turn ends with an
// agent message that names each command's result: exit code or signal, and
// whether its output was truncated.
//
// With Options.Exec set to ExecLocal (or ExecAuto, for a client without
// terminals) it runs the commands itself, in a terminal.Manager of its own
// configured by Options.Local (limits, process groups, sandbox), and
// streams each to the client as a display terminal (display.RunLocalCommand).
//
// Commands are sent as an explicit argv, "sh" "-c" LINE, rather than as a
// bare shell line, so that clients which exec commands directly run them the
// same way as clients which use a shell.
package shellagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentsession"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/terminal"
)

// Options configures the agent. A nil *Options means defaults.
type Options struct {
	// Timeout bounds each command; on expiry the command is killed and
	// counts as failed. Zero means no timeout.
	Timeout time.Duration
	// OutputLimit is the outputByteLimit asked of the client for each
	// command. Zero leaves it to the client's default.
	OutputLimit uint64
	// KeepGoing runs every line even after a command failed; by default the
	// turn stops at the first failure.
	KeepGoing bool
	// Name and Version identify the agent in initialize.
	Name, Version string
	// Exec says where commands run; "" means ExecClient.
	Exec Exec
	// Local configures the terminal runtime of ExecLocal and ExecAuto
	// (nil: its defaults). Each command runs in its session's cwd.
	Local *terminal.Options
	// BeforeLocal, when set, is called once, before the first command the
	// agent runs itself: a host checks there what the sandbox can do and
	// says what it lacks, a cost that an agent whose commands all run in
	// the client's terminals never pays.
	BeforeLocal func()
}

// Serve runs the agent over r and w (the agent's stdin and stdout) until the
// client closes its end, which returns nil, or ctx ends, which returns ctx's
// error (see acp.ServeAgent).
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts *Options) error {
	a := New(opts)
	err := acp.ServeAgent(ctx, a, r, w, nil)
	// Kills what still runs locally, and waits for it.
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return err
}

// Agent implements acp.Agent. Make it with New and serve it with
// acp.ServeAgent, which hands it the connection through SetConn
// (acp.AgentConnSetter).
type Agent struct {
	opts     Options
	conn     *acp.AgentConn
	sessions agentsession.Registry
	local    *terminal.Manager // nil with ExecClient
	// beforeLocal runs Options.BeforeLocal once.
	beforeLocal sync.Once
}

// New returns an agent; opts may be nil.
func New(opts *Options) *Agent {
	a := &Agent{}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.Name == "" {
		a.opts.Name = "acpterm-agent"
	}
	if a.opts.Version == "" {
		a.opts.Version = "dev"
	}
	if a.opts.Exec == ExecLocal || a.opts.Exec == ExecAuto {
		var topts terminal.Options
		if a.opts.Local != nil {
			topts = *a.opts.Local
		}
		a.local = terminal.NewManager(&topts)
	}
	return a
}

// Close ends the commands the agent runs locally and frees its terminal
// runtime. Serve calls it; an Agent served otherwise should call it after
// the connection ended.
func (a *Agent) Close() error {
	if a.local == nil {
		return nil
	}
	return a.local.Close()
}

var _ acp.AgentConnSetter = (*Agent)(nil)

// SetConn gives the agent the connection it calls the client on;
// acp.NewAgentConn calls it before serving the first message.
func (a *Agent) SetConn(c *acp.AgentConn) { a.conn = c }

// Initialize answers the protocol version the commands can run in: 1
// when they would run in the client's terminals (ExecClient, or ExecAuto
// with a client that offers terminals), which v2 does not have; else the
// version the client asks for.
func (a *Agent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	var caps acp.ClientCapabilities
	if req.ClientCapabilities != nil {
		caps = *req.ClientCapabilities
	}
	v := req.ProtocolVersion
	if a.execFor(caps) == ExecClient {
		v = acp.ProtocolVersion1
	}
	return &acp.InitializeResponse{
		ProtocolVersion:   v,
		AgentCapabilities: &acp.AgentCapabilities{},
		AgentInfo:         &acp.Implementation{Name: a.opts.Name, Title: acp.Ptr("acpterm shell agent"), Version: a.opts.Version},
	}, nil
}

// NewSession opens a session in an absolute cwd.
func (a *Agent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	id, err := a.sessions.New(req.Cwd)
	if err != nil {
		return nil, err
	}
	return &acp.NewSessionResponse{SessionID: id}, nil
}

// Prompt runs the prompt's lines as commands. It needs no Cancel method:
// acp.AgentConn cancels ctx on session/cancel, which kills the running
// command, and the turn ends with stopReason cancelled.
func (a *Agent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	cwd, end, err := a.sessions.Begin(req.SessionID, "a prompt")
	if err != nil {
		return nil, err
	}
	defer end()

	exec := a.execFor(a.conn.ClientCapabilities())
	if exec == ExecLocal && a.opts.BeforeLocal != nil {
		a.beforeLocal.Do(a.opts.BeforeLocal)
	}
	if exec == ExecClient && !a.conn.ClientCapabilities().Terminal {
		err := a.say(ctx, req.SessionID, "This client does not support terminals (clientCapabilities.terminal is false), so acpterm's shell agent cannot run commands here.")
		return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
	}

	total := 0
	for range commandLines(req.Prompt) {
		total++
	}
	if total == 0 {
		err := a.say(ctx, req.SessionID, "Nothing to run: send one shell command per line.")
		return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
	}
	var results []outcome
	for line := range commandLines(req.Prompt) {
		o := a.run(ctx, exec, req.SessionID, cwd, line)
		results = append(results, o)
		if o.cancelled {
			break
		}
		if !o.ok() && !a.opts.KeepGoing {
			break
		}
	}
	stop := acp.StopReasonEndTurn
	if ctx.Err() != nil {
		stop = acp.StopReasonCancelled
	}
	// The summary goes out even after a cancel: the protocol lets an agent
	// send updates until it answers the prompt.
	summaryCtx, cancelSummary := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelSummary()
	if err := a.say(summaryCtx, req.SessionID, summary(results, total)); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: stop}, nil
}

// run runs one line and reports how it ended.
func (a *Agent) run(ctx context.Context, exec Exec, sid acp.SessionID, cwd, line string) outcome {
	o := outcome{line: line}
	req := &acp.CreateTerminalRequest{SessionID: sid, Command: "sh", Args: []string{"-c", line}, Cwd: &cwd}
	if a.opts.OutputLimit > 0 {
		req.OutputByteLimit = acp.Ptr(a.opts.OutputLimit)
	}
	copts := display.CommandOptions{Title: line, Timeout: a.opts.Timeout, OutputText: outputText}
	var res *display.CommandResult
	var err error
	if exec == ExecLocal {
		res, err = display.RunLocalCommand(ctx, a.conn, a.local, req, &display.LocalCommandOptions{CommandOptions: copts})
	} else {
		res, err = display.RunCommand(ctx, a.conn, req, &copts)
	}
	if res != nil {
		o.status, o.succeeded = res.Status(), res.Succeeded()
		// Truncated as the tool call's text shows it: cut by the client's
		// limit or by RunCommand's.
		o.truncated = res.Truncated || len(res.Output) > outputText
	}
	switch {
	case ctx.Err() != nil:
		o.cancelled = true
	case err != nil && res == nil:
		o.failure = "could not run: " + errorText(err)
	case err != nil:
		o.failure = "could not run: while running: " + errorText(err)
	}
	return o
}

// outputText is how much of each command's output its finished tool call
// carries as text, for clients that do not show terminals.
const outputText = display.DefaultOutputText

func (a *Agent) say(ctx context.Context, sid acp.SessionID, text string) error {
	return a.conn.SessionUpdate(ctx, &acp.SessionNotification{
		SessionID: sid,
		Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}},
	})
}

// commandLines yields the non-empty lines of the prompt's text blocks,
// trimmed. It holds none of them: a prompt may be a 64 MiB message of
// newlines, which a slice of its lines (16 bytes a string) would turn into
// 1 GiB.
func commandLines(prompt []acp.ContentBlock) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, block := range prompt {
			text, ok := block.(*acp.TextContent)
			if !ok {
				continue
			}
			for line := range strings.SplitSeq(text.Text, "\n") {
				if line = strings.TrimSpace(line); line != "" && !yield(line) {
					return
				}
			}
		}
	}
}

// outcome is how one command ended.
type outcome struct {
	line      string
	status    string // display.CommandResult.Status; "" when it did not run
	succeeded bool
	truncated bool
	cancelled bool
	// failure says why the command could not run or finish ("" when it
	// could). It is text, clipped, rather than the error: with KeepGoing
	// a client answering each line with a 64 MiB error would otherwise
	// have the agent hold all of them until the summary.
	failure string
}

func (o outcome) ok() bool {
	return o.failure == "" && !o.cancelled && o.succeeded
}

// describe is the result of a command as the summary names it: its exit
// code or signal (display.CommandResult.Status), and whether its output was
// truncated.
func (o outcome) describe() string {
	switch {
	case o.failure != "":
		return o.failure
	case o.status == "" && o.cancelled:
		return "cancelled"
	}
	s := o.status
	if o.cancelled && !strings.HasPrefix(s, "cancelled") {
		s = "cancelled, " + s
	}
	if o.truncated {
		s += ", output truncated"
	}
	return s
}

// maxErrorText bounds the text of a command's error in the summary.
const maxErrorText = 1024

// errorText is err as the summary names it, its text clipped to
// maxErrorText bytes: the text may be the client's, of any length.
func errorText(err error) string {
	text := err.Error()
	if len(text) > maxErrorText {
		text = utf8cut.Head(text, maxErrorText) + "…"
	}
	var e *acp.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s (code %d)", text, e.Code)
	}
	return text
}

// summary is the closing agent message: one line per command that ran, and
// a note about those that did not.
func summary(results []outcome, total int) string {
	var b strings.Builder
	failed := 0
	for _, o := range results {
		mark := "ok  "
		if !o.ok() {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, o.line, o.describe())
	}
	fmt.Fprintf(&b, "%d of %d commands ran, %d failed", len(results), total, failed)
	if skipped := total - len(results); skipped > 0 {
		fmt.Fprintf(&b, ", %d not run", skipped)
	}
	b.WriteString(".")
	return b.String()
}
