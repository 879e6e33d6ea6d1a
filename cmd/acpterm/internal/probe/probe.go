// Package probe is the engine of `acpterm probe`: an ACP agent that, when
// prompted, checks how the connected client implements the terminal
// methods (terminal/create, output, wait_for_exit, kill, release) and
// reports each case.
//
// Point any ACP client at `acpterm probe` as if it were an agent and send
// it any prompt. The probe announces each case as a tool call (kind
// execute, title "probe: <title>", the case's terminals embedded), marks it
// completed (pass, info) or failed (fail, skip) with the case's result as
// rawOutput, and ends the turn with a table of results. With
// Options.JSONReport it also writes a Report as JSON.
//
// Normative cases check what the ACP v1 specification asks of a client;
// they pass or fail. Informational cases record what the client does where
// the specification leaves a choice (signal name format, shell lines,
// cancellation of a wait, ...); their result is always "info". Normative
// cases send an explicit argv (sh -c SCRIPT), so that they mean the same
// on clients that exec commands directly and on clients that use a shell.
//
// Each case is bounded by Options.CaseTimeout: a client that never answers
// fails that case with "no answer within …", and the run goes on. Every
// terminal a case creates is released at the end of the case. A
// session/cancel stops the run: the remaining cases are skipped and the
// prompt ends with stopReason cancelled. (A terminal/create still
// unanswered when its case runs out of time is the one thing the probe
// cannot clean up: it never learns the terminal's id.) Some cases make
// short-lived entries named .acpterm-probe-* in the session cwd (a
// directory; FIFOs that hold a command until the case lets it go) and
// remove them.
//
// Serve is all a command needs:
//
//	err := probe.Serve(ctx, os.Stdin, os.Stdout, &probe.Options{JSONReport: "report.json"})
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentsession"
)

// DefaultCaseTimeout bounds a case when Options.CaseTimeout is zero.
const DefaultCaseTimeout = 15 * time.Second

// AgentName is the name the probe gives in initialize (agentInfo.name).
const AgentName = "acpterm-probe"

// Options configure the probe. A nil *Options means defaults.
type Options struct {
	// JSONReport is the path to write the Report of each run to, as JSON
	// (`acpterm probe --json FILE`); "" writes none.
	JSONReport string
	// Cases restricts the run to these case ids, in the suite's order;
	// nil or empty runs every case. Serve rejects unknown ids.
	Cases []string
	// CaseTimeout bounds each case; zero means DefaultCaseTimeout. On a
	// conforming client a case takes a fraction of a second (2 s for
	// concurrent-waits where the session cwd is not writable). Where a
	// case waits for something that should follow at once (pending waits
	// answering, a released command dying), it gives up after 5 s or half
	// the time it has left, whichever is less, and fails saying what it
	// saw.
	CaseTimeout time.Duration
	// Version is the agentInfo version; "" means "dev".
	Version string
}

// Serve runs the probe agent over r and w (the agent's stdin and stdout)
// until the client closes its end, which returns nil, or ctx ends, which
// returns ctx's error (see acp.ServeAgent).
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts *Options) error {
	a, err := newAgent(opts)
	if err != nil {
		return err
	}
	tap, tr, tw := tapConn(r, w)
	a.tap = tap
	return acp.ServeAgent(ctx, a, tr, tw, nil)
}

var _ acp.AgentConnSetter = (*agent)(nil)

// SetConn receives the connection from acp.NewAgentConn before it serves.
func (a *agent) SetConn(c *acp.AgentConn) { a.conn = c }

// selectCases returns the suite's cases that ids names, in suite order.
func selectCases(ids []string) ([]*probeCase, error) {
	if len(ids) == 0 {
		return suite, nil
	}
	known := map[string]bool{}
	for _, c := range suite {
		known[c.ID] = true
	}
	want := map[string]bool{}
	var unknown []string
	for _, id := range ids {
		if !known[id] {
			unknown = append(unknown, id)
		}
		want[id] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown case id(s) %s (acpterm probe --list shows them)", strings.Join(unknown, ", "))
	}
	var out []*probeCase
	for _, c := range suite {
		if want[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// agent implements acp.Agent.
type agent struct {
	opts  Options
	cases []*probeCase
	conn  *acp.AgentConn // set by SetConn before any handler runs
	tap   *wireTap

	sessions agentsession.Registry

	mu       sync.Mutex
	client   ClientInfo
	protocol int
	runs     int // prompts so far, to keep tool call ids unique
}

func newAgent(opts *Options) (*agent, error) {
	a := &agent{}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.CaseTimeout <= 0 {
		a.opts.CaseTimeout = DefaultCaseTimeout
	}
	if a.opts.Version == "" {
		a.opts.Version = "dev"
	}
	cases, err := selectCases(a.opts.Cases)
	if err != nil {
		return nil, err
	}
	a.cases = cases
	return a, nil
}

// Initialize records who the client is and accepts protocol version 1.
func (a *agent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	a.mu.Lock()
	a.protocol = int(req.ProtocolVersion)
	a.client = ClientInfo{}
	if req.ClientInfo != nil {
		a.client = ClientInfo{Name: req.ClientInfo.Name, Version: req.ClientInfo.Version}
	}
	a.mu.Unlock()
	return &acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersion1,
		AgentCapabilities: &acp.AgentCapabilities{},
		AgentInfo: &acp.Implementation{
			Name:    AgentName,
			Title:   acp.Ptr("acpterm terminal conformance probe"),
			Version: a.opts.Version,
		},
	}, nil
}

// NewSession opens a session; its cwd is where the cases run their
// commands.
func (a *agent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	id, err := a.sessions.New(req.Cwd)
	if err != nil {
		return nil, err
	}
	return &acp.NewSessionResponse{SessionID: id}, nil
}

// Prompt runs the suite, whatever the prompt says. It needs no Cancel
// method: acp.AgentConn cancels ctx on session/cancel, so the running case
// ends, the rest are skipped, and the prompt answers with stopReason
// cancelled.
func (a *agent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	cwd, end, err := a.sessions.Begin(req.SessionID, "the probe")
	if err != nil {
		return nil, err
	}
	defer end()
	a.mu.Lock()
	a.runs++
	r := &runner{
		a:       a,
		sid:     req.SessionID,
		cwd:     cwd,
		run:     a.runs,
		timeout: a.opts.CaseTimeout,
		report:  &Report{Client: a.client, ProtocolVersion: a.protocol, Cases: []CaseResult{}},
	}
	a.mu.Unlock()

	r.runAll(ctx)
	rep := r.report
	rep.Summarize()

	// The closing message and the report go out even after a cancel: an
	// agent may send updates until it answers the prompt.
	fin, cancelFin := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancelFin()
	text := rep.message()
	if r.note != "" {
		text = r.note + "\n\n" + text
	}
	if a.opts.JSONReport != "" {
		if err := rep.writeFile(a.opts.JSONReport); err != nil {
			text += fmt.Sprintf("\nCould not write the JSON report: %v\n", err)
		} else {
			text += fmt.Sprintf("\nJSON report written to %s\n", a.opts.JSONReport)
		}
	}
	err = a.conn.SessionUpdate(fin, &acp.SessionNotification{
		SessionID: req.SessionID,
		Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}},
	})
	if errors.Is(err, acp.ErrConnClosed) {
		return nil, err
	}
	stop := acp.StopReasonEndTurn
	if ctx.Err() != nil {
		stop = acp.StopReasonCancelled
	}
	return &acp.PromptResponse{StopReason: stop}, nil
}
