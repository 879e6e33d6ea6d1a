package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// Format is how a run is written to stdout.
type Format int

const (
	// FormatText is for people: messages, plans, tool calls with the tail
	// of their terminals.
	FormatText Format = iota
	// FormatJSON is for programs: one JSON event per line.
	FormatJSON
)

// Defaults of Config's zero fields.
const (
	DefaultInitTimeout = 30 * time.Second
	DefaultCancelGrace = 10 * time.Second
)

// maxBadLines is how many invalid lines an initialized agent may write to
// its stdout before the run ends with a protocol error. Before initialize
// is answered, the first one ends it: nothing good follows a banner.
const maxBadLines = 5

// Config is one `acpterm run`. Zero fields mean the defaults.
type Config struct {
	// Agent is the agent's command line: the program and its arguments.
	Agent []string
	// Cwd is the session's working directory; "" means the current one.
	Cwd string
	// Roots confine fs/* paths and terminal cwds; empty means {Cwd}.
	Roots []string
	// Prompt is the text sent with session/prompt.
	Prompt string
	// Auth is the ID of the authentication method to authenticate with
	// right after initialize; "" authenticates only when session/new
	// answers -32000 (auth_session.go).
	Auth string
	// Mode, Model and Settings are applied after session/new, in this
	// order, before the prompt (session_config.go); "" and nil leave the
	// agent's choice.
	Mode, Model string
	Settings    []SessionSetting
	// TurnTimeout cancels a turn that runs longer, then kills the agent
	// after CancelGrace (0: none); the run exits with ExitTimeout.
	TurnTimeout time.Duration

	Format   Format
	Approval Approval
	// TTYIn and TTYOut are where permission questions are answered and
	// asked (the controlling terminal); nil TTYIn means there is nobody to
	// ask, so ApprovalAsk denies.
	TTYIn  io.Reader
	TTYOut io.Writer
	// Text configures FormatText (colour, live region, screen size).
	Text TextOptions

	// OutputLimit is the host's ceiling on any terminal's output buffer
	// (0: terminal.DefaultOutputCeiling).
	OutputLimit uint64
	// MaxTerminals bounds the live terminals of the session (0: the
	// runtime's default; negative: no limit).
	MaxTerminals int
	// KillGrace is the time between SIGTERM and SIGKILL when a terminal is
	// killed (0: the runtime's default).
	KillGrace time.Duration
	// Timeout kills any terminal command that runs longer (0: none).
	Timeout time.Duration
	// Shell runs args-less terminal commands ("": the runtime's default).
	Shell string
	// InitTimeout bounds initialize and session/new.
	InitTimeout time.Duration
	// CancelGrace is how long the agent has to end a cancelled turn
	// before it is killed.
	CancelGrace time.Duration

	// Sandbox confines the terminal commands (see package sandbox); the
	// zero value, sandbox.Off, does not. The host's main must call
	// sandbox.Init for any other mode, or for DenyNetwork.
	Sandbox sandbox.Mode
	// Network is the sandbox's network setting.
	Network sandbox.Network
	// Writable lists absolute paths that a WorkspaceWrite sandbox may
	// write on top of sandbox.DefaultWritable(Roots...). Each must exist.
	Writable []string
	// WritableGit leaves the .git of writable directories writable
	// (sandbox.Policy.WritableGit).
	WritableGit bool
	// SandboxAgent runs the agent itself, and everything it starts, in
	// the same sandbox (with its own private TMPDIR).
	SandboxAgent bool

	Stdout, Stderr io.Writer
	// Interrupts delivers SIGINT/SIGTERM: the first cancels the turn
	// (session/cancel), the second kills the agent and its terminals.
	Interrupts <-chan os.Signal
}

var (
	errInterrupted = errors.New("interrupted")
	errKilled      = errors.New("the agent was killed")
	errTimeout     = errors.New("timeout")
)

// protocolError is a broken conversation: the agent wrote what is not
// ACP, or answered in a way the protocol does not allow.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

// Run runs one prompt turn with the agent described by cfg and returns the
// process exit status (see the Exit* constants). It never returns before
// the agent, its terminals and every goroutine it started are gone.
func Run(ctx context.Context, cfg *Config) int {
	d := &driver{cfg: *cfg, stop: make(chan struct{}), cancelSent: make(chan struct{}, 1)}
	return d.run(ctx)
}

type phase int

const (
	phaseSetup phase = iota // initialize, session/new
	phaseTurn               // session/prompt
	phaseDone               // shutting down
)

type driver struct {
	cfg  Config
	cwd  string
	r    Renderer
	view *sessionView // in front of r: the session's mode and model
	perm *approver
	mgr  *terminal.Manager
	conn *acp.ClientConn
	cmd  *exec.Cmd

	sandbox      *sandbox.Policy  // of the terminals, and of the agent with SandboxAgent
	agentSandbox *sandbox.Applied // the agent's, with SandboxAgent

	stop chan struct{} // closed at shutdown: ends the ticker and signal watcher
	// cancelSent tells watchSignals that a cancel it did not see was sent
	// (Ctrl-C at a permission question), so the grace period starts.
	cancelSent chan struct{}
	wg         sync.WaitGroup
	stderrMu   sync.Mutex
	errPipe    *os.File // the agent's stderr

	mu          sync.Mutex
	phase       phase
	sid         acp.SessionID
	initialized bool
	badLines    int
	protoErr    *protocolError
	interrupts  int
	killed      bool
	timedOut    bool                    // --turn-timeout ended the turn
	cancelCall  context.CancelCauseFunc // of the call in flight
}

func (d *driver) usage(format string, args ...any) int {
	fmt.Fprintf(d.cfg.Stderr, "acpterm: "+format+"\n", args...)
	return ExitUsage
}

func (d *driver) run(ctx context.Context) int {
	c := &d.cfg
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if len(c.Agent) == 0 || c.Agent[0] == "" {
		return d.usage("no agent command given")
	}
	if strings.TrimSpace(c.Prompt) == "" {
		return d.usage("the prompt is empty")
	}
	cwd := c.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return d.usage("cannot get the current directory: %v", err)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return d.usage("--cwd: %v", err)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return d.usage("--cwd %s is not a directory", cwd)
	}
	d.cwd = cwd
	roots := c.Roots
	if len(roots) == 0 {
		roots = []string{cwd}
	}
	ws, err := NewWorkspace(roots)
	if err != nil {
		return d.usage("--root: %v", err)
	}
	defer ws.Close()
	if real, err := filepath.EvalSymlinks(cwd); err != nil || !ws.contains(real) {
		return d.usage("--cwd %s is outside every --root (%s)", cwd, strings.Join(ws.Roots(), ", "))
	}
	sp, code := d.sandboxPolicy(ws.Roots())
	if sp == nil {
		return code
	}
	d.sandbox = sp

	if c.Format == FormatJSON {
		d.r = NewJSONRenderer(c.Stdout, c.Text.Now)
	} else {
		d.r = NewTextRenderer(c.Stdout, &c.Text)
	}
	d.view = newSessionView(d.r)
	d.r = d.view
	var p *prompter
	if c.TTYIn != nil && c.TTYOut != nil {
		p = newPrompter(c.TTYIn, c.TTYOut, d.r.Suspend)
		p.interrupt = d.promptInterrupt
		defer p.Close()
	}
	d.perm = newApprover(c.Approval, p, d.r.Permission, d.warn)
	d.mgr = terminal.NewManager(&terminal.Options{
		Policy: &terminal.Policy{
			Decide:                 d.perm.DecideTerminal,
			MaxTerminalsPerSession: c.MaxTerminals,
			OutputCeiling:          c.OutputLimit,
			Timeout:                c.Timeout,
			Roots:                  ws.Roots(),
			Sandbox:                sp,
		},
		Shell:      c.Shell,
		KillGrace:  c.KillGrace,
		DefaultCwd: cwd,
		Logf:       func(format string, args ...any) { d.warn("acpterm: terminal: " + fmt.Sprintf(format, args...)) },
	})
	sub, err := d.mgr.Subscribe("", "")
	if err != nil {
		_ = d.mgr.Close()
		fmt.Fprintf(c.Stderr, "acpterm: %v\n", err)
		return ExitFailure
	}
	d.wg.Add(3)
	go d.pumpEvents(sub)
	go d.tick()
	go d.watchSignals()

	h := &handler{Manager: d.mgr, ws: ws, perm: d.perm, r: d.r, disp: newDisplayTerminals(d.r)}
	reason, code, msg := d.session(ctx, h)

	d.shutdown(code == ExitAgent || d.wasKilled())
	if err := d.agentSandbox.Cleanup(); err != nil {
		d.warn("acpterm: removing the agent's TMPDIR: " + err.Error())
	}
	d.r.Finish(reason)
	if msg != "" {
		if reason == "" {
			d.r.Error(msg, code)
		}
		fmt.Fprintf(c.Stderr, "acpterm: %s\n", textsafe.Line(msg)) // it may quote the agent
	}
	return code
}

// session starts the agent and runs the turn. It returns the stop reason
// ("" when the turn did not end normally), the exit status, and the error
// message for a failure.
func (d *driver) session(ctx context.Context, h *handler) (acp.StopReason, int, string) {
	c := &d.cfg
	cmd := exec.Command(c.Agent[0], c.Agent[1:]...)
	cmd.Dir = d.cwd
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", ExitFailure, err.Error()
	}
	cmd.Stderr = pw
	if c.SandboxAgent {
		// Wrap keeps SysProcAttr, and StartAgent adds to it: the process
		// group, the cgroup and Pdeathsig apply to the helper, which
		// becomes the agent.
		a, err := d.sandbox.Wrap(cmd)
		if err != nil {
			pr.Close()
			pw.Close()
			return "", ExitFailure, fmt.Sprintf("cannot sandbox the agent: %v", err)
		}
		d.agentSandbox = a
	}
	// Contain: the agent leads its own process group (a Ctrl-C typed at
	// the terminal reaches acpterm only, which turns it into
	// session/cancel), runs in a cgroup of its own where the tree is
	// writable, and dies with acpterm (PR_SET_PDEATHSIG; this goroutine is
	// never locked to its thread).
	conn, err := acp.StartAgent(cmd, h, &acp.ConnOptions{OnBadMessage: d.badMessage, Contain: true})
	pw.Close()
	if err != nil {
		pr.Close()
		return "", ExitAgent, fmt.Sprintf("cannot start the agent %s: %v", c.Agent[0], unwrapExec(err))
	}
	d.mu.Lock()
	d.cmd, d.conn, d.errPipe = cmd, conn, pr
	d.mu.Unlock()
	d.wg.Add(1)
	go d.pumpStderr(pr)

	// initialize
	callCtx, done := d.callCtx(ctx, c.InitTimeout)
	init, authOpts, err := conn.InitializeAuth(callCtx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "acpterm", Version: Version()},
		// Agents that run commands themselves may then stream them to us
		// for display (display.go); acp fills in the standard capabilities.
		// Terminal logins are run by acpterm login (auth.go).
		ClientCapabilities: withAuthCapabilities(&acp.ClientCapabilities{
			Meta: acp.Meta{metaTerminalOutputKey: json.RawMessage("true")},
		}),
	})
	if err != nil {
		code, msg := d.callFailed(callCtx, "initialize", err)
		done()
		return "", code, msg
	}
	done()
	if init.ProtocolVersion != acp.ProtocolVersion1 {
		return "", ExitAgent, fmt.Sprintf("the agent speaks ACP protocol version %d; acpterm speaks version 1", init.ProtocolVersion)
	}
	d.mu.Lock()
	d.initialized = true
	d.mu.Unlock()

	// authenticate (up front only with --auth), then session/new, which
	// authenticates once and tries again on -32000 (auth_session.go)
	auth, failCode, failMsg := d.startAuth(ctx, authOpts)
	if auth == nil {
		return "", failCode, failMsg
	}
	sess, failCode, failMsg := auth.newSession(ctx)
	if sess == nil {
		return "", failCode, failMsg
	}
	if sess.SessionID == "" {
		return "", ExitAgent, "the agent answered session/new without a sessionId"
	}
	if err := d.mgr.SetSessionCwd(string(sess.SessionID), d.cwd); err != nil {
		return "", ExitFailure, err.Error()
	}
	if code, msg := d.configureSession(ctx, d.view, sess); code != ExitOK {
		return "", code, msg
	}

	// session/prompt
	d.mu.Lock()
	d.sid, d.phase = sess.SessionID, phaseTurn
	interrupted := d.interrupts > 0
	d.mu.Unlock()
	if interrupted {
		return "", ExitCancelled, "interrupted before the turn started"
	}
	d.view.start(filepath.Base(c.Agent[0]))
	if c.TurnTimeout > 0 {
		d.wg.Add(1)
		go d.watchTurn(sess.SessionID)
	}
	callCtx, done = d.callCtx(ctx, 0)
	resp, err := conn.Prompt(callCtx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: c.Prompt}},
	})
	d.mu.Lock()
	d.phase = phaseDone
	d.mu.Unlock()
	if d.turnTimedOut() && !d.cancelledByUser() {
		// Whether the agent ended the cancelled turn or was killed, the
		// turn is reported as cancelled by the timeout.
		done()
		how := "cancelled"
		if d.wasKilled() {
			how = "cancelled; the agent did not stop and was killed"
		}
		return acp.StopReasonCancelled, ExitTimeout, fmt.Sprintf("the turn ran longer than --turn-timeout %s (%s)", c.TurnTimeout, how)
	}
	if err != nil {
		code, msg := d.callFailed(callCtx, "session/prompt", err)
		done()
		if code == ExitCancelled {
			return acp.StopReasonCancelled, code, msg
		}
		return "", code, msg
	}
	done()
	if d.cancelledByUser() && resp.StopReason != acp.StopReasonCancelled {
		// The spec asks an agent to answer a cancelled turn with
		// "cancelled", but some answer "end_turn" (or anything else). The
		// user pressed Ctrl-C: the turn is shown and reported as cancelled
		// whatever the agent says, so a script never takes it for success.
		d.warn(fmt.Sprintf("acpterm: the agent ended the cancelled turn with stop reason %q", shortStopReason(resp.StopReason)))
		return acp.StopReasonCancelled, ExitCancelled, ""
	}
	code := ExitCodeFor(resp.StopReason)
	if code == ExitAgent {
		return "", code, fmt.Sprintf("the agent ended the turn with an unknown stop reason %q", resp.StopReason)
	}
	return resp.StopReason, code, ""
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// callCtx is the context of one call to the agent: bounded by timeout
// (when positive) and cancelled by a protocol error or an interrupt.
func (d *driver) callCtx(parent context.Context, timeout time.Duration) (context.Context, func()) {
	var cancelT context.CancelFunc = func() {}
	if timeout > 0 {
		parent, cancelT = context.WithTimeoutCause(parent, timeout, errTimeout)
	}
	ctx, cancel := context.WithCancelCause(parent)
	d.mu.Lock()
	d.cancelCall = cancel
	switch {
	case d.protoErr != nil:
		cancel(d.protoErr)
	case d.killed:
		cancel(errKilled)
	case d.phase == phaseSetup && d.interrupts > 0:
		cancel(errInterrupted)
	}
	d.mu.Unlock()
	// A call that is abandoned (timeout, protocol error, interrupt) ends
	// the run, and the agent with it, at once: a peer that stopped reading
	// its stdin could otherwise hold up the $/cancel_request the call
	// sends on its way out.
	stopKill := context.AfterFunc(ctx, d.killAgent)
	return ctx, func() {
		stopKill()
		d.mu.Lock()
		d.cancelCall = nil
		d.mu.Unlock()
		cancel(nil)
		cancelT()
	}
}

// killAgent kills the agent with its cgroup (or process group), without
// more ado.
func (d *driver) killAgent() {
	d.mu.Lock()
	conn := d.conn
	d.mu.Unlock()
	if conn != nil {
		conn.Kill()
	}
}

// callFailed explains why a call to the agent failed.
func (d *driver) callFailed(ctx context.Context, method string, err error) (int, string) {
	var pe *protocolError
	cause := context.Cause(ctx)
	switch {
	case d.wasKilled():
		return ExitCancelled, "cancelled: " + errKilled.Error()
	case ctx.Err() != nil && errors.Is(cause, errInterrupted):
		return ExitCancelled, "interrupted before the turn started"
	case ctx.Err() != nil && errors.As(cause, &pe):
		return ExitAgent, "protocol error: " + pe.msg
	case ctx.Err() != nil && errors.Is(cause, errTimeout):
		return ExitAgent, fmt.Sprintf("the agent did not answer %s within %s (see --init-timeout)", method, d.cfg.InitTimeout)
	case errors.Is(err, acp.ErrPeerStalled):
		return ExitAgent, "protocol error: " + err.Error()
	case errors.Is(err, acp.ErrConnClosed):
		when := "before answering " + method
		if method == "session/prompt" {
			when = "during the turn"
		}
		select {
		case <-d.conn.Exited():
			if d.wasKilled() {
				return ExitCancelled, "cancelled: " + errKilled.Error()
			}
			return ExitAgent, fmt.Sprintf("the agent exited %s (%s)", when, describeExit(d.conn.ExitError()))
		case <-time.After(2 * time.Second):
			return ExitAgent, fmt.Sprintf("the agent closed its stdout %s", when)
		}
	}
	var ae *acp.Error
	if errors.As(err, &ae) {
		if ae.Code == acp.CodeAuthRequired {
			return ExitAgent, fmt.Sprintf("the agent needs authentication (%s); log in with the agent's own tools first", ae.Message)
		}
		return ExitAgent, fmt.Sprintf("the agent answered %s with an error: %s (code %d)%s", method, ae.Message, ae.Code, errorDataText(ae.Data))
	}
	return ExitAgent, fmt.Sprintf("protocol error: bad answer to %s: %v", method, err)
}

// badMessage counts the agent's lines that are not JSON-RPC: any before
// initialize is answered, or maxBadLines in all, is a protocol error.
func (d *driver) badMessage(reason string) {
	d.mu.Lock()
	d.badLines++
	n, fatal := d.badLines, !d.initialized || d.badLines >= maxBadLines
	d.mu.Unlock()
	if fatal {
		what := "the agent wrote something other than ACP JSON-RPC to its stdout"
		if n > 1 {
			what = fmt.Sprintf("the agent wrote %d lines that are not ACP JSON-RPC to its stdout", n)
		}
		d.setProtoErr(&protocolError{msg: what + " (" + reason + ")"})
		return
	}
	d.warn("acpterm: ignored an invalid line from the agent: " + reason)
}

func (d *driver) setProtoErr(err *protocolError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.protoErr != nil {
		return
	}
	d.protoErr = err
	if d.cancelCall != nil {
		d.cancelCall(err)
	}
}

func (d *driver) wasKilled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.killed
}

// warn writes one diagnostic line to stderr, out of the live region's way.
// The line may quote the agent (a method, a message): textsafe.Line.
func (d *driver) warn(line string) {
	d.writeStderr(textsafe.Line(strings.TrimRight(line, "\n")))
}

// watchSignals turns interrupts into a cancel, then a kill.
func (d *driver) watchSignals() {
	defer d.wg.Done()
	var grace <-chan time.Time
	for {
		select {
		case <-d.stop:
			return
		case <-d.cfg.Interrupts:
			if d.interrupt() && grace == nil {
				t := time.NewTimer(d.cfg.CancelGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-d.cancelSent:
			if grace == nil {
				t := time.NewTimer(d.cfg.CancelGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			d.kill()
			d.warn(fmt.Sprintf("acpterm: the agent did not end the cancelled turn within %s; killed it", d.cfg.CancelGrace))
		}
	}
}

// promptInterrupt is Ctrl-C typed at a permission question, where raw
// mode makes it a byte instead of SIGINT. It is handled as that signal
// would be, but before the question is answered: sent to ourselves as a
// signal, it could arrive after the agent, told "no", had already ended
// the turn, which would then not count as cancelled.
func (d *driver) promptInterrupt() {
	if d.interrupt() {
		select {
		case d.cancelSent <- struct{}{}: // watchSignals starts the grace period
		default:
		}
	}
}

// interrupt handles one SIGINT/SIGTERM. It reports whether a cancel was
// sent, which starts the grace period.
func (d *driver) interrupt() bool {
	d.mu.Lock()
	d.interrupts++
	n, ph, sid := d.interrupts, d.phase, d.sid
	if ph == phaseSetup && d.cancelCall != nil {
		d.cancelCall(errInterrupted)
	}
	d.mu.Unlock()
	switch {
	case n > 1 || ph == phaseDone:
		// Kill first: the warning goes to stderr, which a stalled reader
		// could block.
		d.kill()
		d.warn("acpterm: killing the agent and its terminals")
		return false
	case ph == phaseSetup:
		return false
	}
	d.warn("acpterm: cancelling the turn (press Ctrl-C again to kill the agent)")
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// session/cancel first: the agent handles it before it sees the
		// "cancelled" answers to its pending permission requests.
		_ = d.conn.Cancel(ctx, &acp.CancelNotification{SessionID: sid})
		d.perm.CancelAll()
	}()
	return true
}

// kill ends the agent (with its cgroup or process group), the session's
// terminals and the call in flight at once. The terminals' process groups
// get SIGKILL now; their release, in shutdown, then takes their cgroups
// without a grace period to wait out.
func (d *driver) kill() {
	d.mu.Lock()
	d.killed = true
	if d.cancelCall != nil {
		d.cancelCall(errKilled)
	}
	sid := d.sid
	d.mu.Unlock()
	d.killAgent()
	if sid != "" {
		// A listed terminal is not released yet, so its leader is not
		// reaped and its PID still names its group.
		for _, t := range d.mgr.Terminals(string(sid)) {
			killProcessGroup(t.PID)
		}
	}
	d.perm.CancelAll()
}

// shutdown releases the session's terminals, stops the agent (at once when
// hard, else in order: stdin closed, SIGTERM, SIGKILL), kills what is left
// of its cgroup or process group, closes the terminal manager and joins
// every goroutine of the run.
//
// It is bounded whatever the agent or a request handler does (barring
// processes stuck in the kernel): releasing the terminals takes at most
// KillGrace plus the 100 ms output drain; acp's Close of the agent at most
// 2 s after stdin is closed, 2 s after SIGTERM, 2 s after SIGKILL, then 1 s
// for request handlers, which are abandoned after that; the stderr pump
// 200 ms; the session/cancel sender 5 s, running since the interrupt. So
// after the turn ends, Run returns within KillGrace + 7.5 s; after a first
// interrupt, within CancelGrace + KillGrace + 7.5 s (the agent is killed
// when CancelGrace runs out, which makes its Close take 1 s at most); after
// a second one, which kills everything at once, within about 1.5 s.
func (d *driver) shutdown(hard bool) {
	d.mu.Lock()
	d.phase = phaseDone
	conn, sid, errPipe := d.conn, d.sid, d.errPipe
	d.mu.Unlock()
	d.perm.CancelAll()
	if conn != nil {
		if hard {
			conn.Kill()
		}
		if sid != "" {
			d.mgr.ReleaseSession(string(sid))
		}
		// Close kills what the agent left behind in its cgroup or group
		// (ConnOptions.Contain).
		if err := conn.Close(); err != nil {
			d.warn("acpterm: " + err.Error())
		}
		// A descendant of the agent outside its group may hold its stderr
		// open; what it writes from now on is not waited for.
		_ = errPipe.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	}
	_ = d.mgr.Close()
	close(d.stop)
	d.wg.Wait()
}

// cancelledByUser reports whether the user interrupted the turn (Ctrl-C or
// SIGTERM while session/prompt was in flight).
func (d *driver) cancelledByUser() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.interrupts > 0
}

// shortStopReason cuts an agent's stop reason for a diagnostic: it is
// agent text, so at most a short prefix of it is shown, and %q escapes the
// rest.
func shortStopReason(r acp.StopReason) string {
	s := string(r)
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}

// sandboxPolicy is the policy of the run's terminals (and agent): the
// roots and the caches (sandbox.DefaultWritable), then Config.Writable.
// It checks the policy against this machine now, so that a sandbox the
// kernel cannot provide ends the run at once, rather than fail each
// command the agent tries; on failure it returns nil and the exit status.
func (d *driver) sandboxPolicy(roots []string) (*sandbox.Policy, int) {
	c := &d.cfg
	sp := &sandbox.Policy{Mode: c.Sandbox, Network: c.Network, WritableGit: c.WritableGit}
	if c.Sandbox == sandbox.WorkspaceWrite {
		sp.Writable = sandbox.DefaultWritable(roots...)
	}
	for _, w := range c.Writable {
		if !filepath.IsAbs(w) {
			return nil, d.usage("--writable %s is not an absolute path", w)
		}
		if _, err := os.Stat(w); err != nil {
			return nil, d.usage("--writable: %v", err)
		}
		sp.Writable = append(sp.Writable, filepath.Clean(w))
	}
	// A command that is never started: Wrap only works out the plan (and
	// makes a TMPDIR, removed at once).
	a, err := sp.Wrap(&exec.Cmd{Path: "/bin/true"})
	if err != nil {
		fmt.Fprintf(c.Stderr, "acpterm: the sandbox cannot be set up: %v\n(see acpterm sandbox; --sandbox off runs commands unconfined)\n", err)
		return nil, ExitFailure
	}
	_ = a.Cleanup()
	return sp, 0
}
