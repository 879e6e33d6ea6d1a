package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/login"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
)

// This file starts the agent and makes the calls to it: the context of
// each call, what a failed call means, and the agent's protocol errors.

// agentStdinGrace is how long an agent has, once the run is over and its
// stdin closed, before it is sent SIGTERM. Several agents (codex, claude)
// only ever stop on SIGTERM, and acp's default of 2 s made every run of
// theirs 2 s longer than it had to be; they write their state as they go.
// acpx waits 100 ms.
const agentStdinGrace = 250 * time.Millisecond

// agentTermWait is how long it then has after SIGTERM before SIGKILL.
const agentTermWait = 2 * time.Second

// start starts the agent, in its own process group and cgroup, and
// initializes it. It returns the authentication methods the agent offers,
// or the exit status and message of a failure.
func (d *driver) start(ctx context.Context, h acp.Client) ([]acp.AuthOption, int, string) {
	c := &d.cfg
	cmd, code, msg := d.agentProcessStart()
	if code != ExitOK {
		return nil, code, msg
	}
	d.showConfinement()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, ExitFailure, err.Error()
	}
	cmd.Stderr = pw
	// Contain: the agent leads its own process group (a Ctrl-C typed at
	// the terminal reaches acpterm only, which turns it into
	// session/cancel), runs in a cgroup of its own where the tree is
	// writable, and dies with acpterm (PR_SET_PDEATHSIG; this goroutine is
	// never locked to its thread).
	conn, err := acp.StartAgent(cmd, h, &acp.ConnOptions{OnBadMessage: d.badMessage, Contain: true,
		TerminateDuration: agentStdinGrace, TermWait: agentTermWait, OfferV2: c.Protocol.offersV2(), OnlyV2: c.Protocol == ProtocolV2})
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, ExitAgent, fmt.Sprintf("cannot start the agent %s: %v", c.Agent[0], unwrapExec(err))
	}
	d.mu.Lock()
	d.cmd, d.conn, d.errPipe = cmd, conn, pr
	d.mu.Unlock()
	d.errPump.start(pr)
	d.wg.Add(1)
	go d.pumpStderr(pr)

	// initialize
	callCtx, done := d.callCtx(ctx, c.InitTimeout)
	init, authOpts, err := conn.InitializeAuth(callCtx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "acpterm", Version: Version()},
		// Agents that run commands themselves may then stream them to us
		// for display (render.DisplayTerminals); acp fills in the standard capabilities.
		// Terminal logins are run by acpterm login (auth.go).
		ClientCapabilities: login.WithCapabilities(&acp.ClientCapabilities{
			Meta:        d.capabilityMeta(),
			Elicitation: d.elicitationCapabilities(),
		}),
	})
	if err != nil {
		code, msg := d.callFailed(callCtx, "initialize", err)
		if errors.Is(err, acp.ErrVersionNegotiation) && c.Protocol == ProtocolV1 {
			msg += " (--protocol auto offers version 2 too)"
		}
		done()
		return nil, code, msg
	}
	done()
	if msg := c.Protocol.checkVersion(conn.ProtocolVersion()); msg != "" {
		return nil, ExitAgent, msg
	}
	if conn.ProtocolVersion() == acp.ProtocolVersion2 {
		d.jobs.useV2(d.cancelBackground)
	}
	d.mu.Lock()
	d.initialized = true
	if init.AgentCapabilities != nil {
		d.caps = *init.AgentCapabilities
	}
	d.mu.Unlock()
	return authOpts, ExitOK, ""
}

// agentProcessStart is the agent's process, not started: agentstart.Start's, with
// the run's sandbox (d.sandbox) as the base of the agent's, or with
// --remote the agent's state alone (the run's sandbox is the target's);
// with --remote-agent the transport that starts it on the target, where
// the exec server confines it (remoteAgentArgs).
func (d *driver) agentProcessStart() (*exec.Cmd, int, string) {
	c := &d.cfg
	if c.Remote != nil && c.Remote.Agent {
		cmd, err := d.agentProcess(c.Agent[1:])
		if err != nil {
			return nil, ExitFailure, err.Error()
		}
		cmd.Dir = d.agentDir()
		return cmd, ExitOK, ""
	}
	s := &agentstart.Start{Agent: c.Agent, Dir: d.agentDir(), Profile: c.AgentProfile, Confine: c.SandboxAgent, Policy: d.agentBasePolicy(), MaskKeys: c.MaskKeys,
		MCPAddr: d.mcp.tcpAddr()}
	if c.Remote != nil {
		s.Policy = nil
	}
	cmd, a, err := s.Command()
	if err != nil {
		return nil, ExitFailure, err.Error()
	}
	d.agentSandbox = a
	d.keyMask = s.Mask
	switch {
	case s.MCPViaTCP:
		d.mcp.useTCP()
	case s.MCPUnreachable:
		d.warn("acpterm: the MCP server is offered, but the agent's network is denied: its relay cannot reach this run (--network proxy or --allow-host lets it)")
	}
	return cmd, ExitOK, ""
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
	case d.phase == phaseSetup && d.interrupts > 0, d.phase == phaseIdle && d.quitting():
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
		msg := fmt.Sprintf("the agent answered %s with an error: %s (code %d)%s", method, ae.Message, ae.Code, errorDataText(ae.Data))
		return ExitAgent, msg + d.rootHint(msg)
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
// The line may quote the agent (a method, a message): see warnLine.
func (d *driver) warn(line string) {
	d.writeStderr(warnLine(line))
}

// maxWarnLine bounds a diagnostic line, in bytes: what it quotes of the
// agent (an error message, a method name) may be of any length.
const maxWarnLine = 8 << 10

// warnLine is line as warn writes it: one line, sanitized, clipped.
func warnLine(line string) string {
	return textsafe.Line(render.Clip(strings.TrimRight(line, "\n"), maxWarnLine))
}

// sandboxPolicy is the policy of the run's terminals (and agent): the
// roots, then Config.Writable, and caches of the commands' own below
// sandbox.DefaultCacheDir (the user's stay read-only), which each Wrap
// checks again and leaves out, naming them, when a link on their way
// could have been made by a sandboxed command.
// It checks the policy against this machine now, so that a sandbox the
// kernel cannot provide ends the run at once, rather than fail each
// command the agent tries; on failure it returns nil and the exit status.
func (d *driver) sandboxPolicy(roots []string) (*sandbox.Policy, int) {
	c := &d.cfg
	// Without user namespaces (stock Ubuntu 24.04 and later) Landlock
	// still confines writes; what needs a mount namespace is named on the
	// run's first line (confinementLine), never dropped in silence.
	sp := &sandbox.Policy{Mode: c.Sandbox, Network: c.Network, WritableGit: c.WritableGit, WritableConfig: c.WritableConfig, WithoutMountNamespace: true}
	d.proxyPolicy(sp)
	if c.Sandbox == sandbox.WorkspaceWrite {
		sp.Writable = slices.Clone(roots)
		sp.CacheDir = sandbox.DefaultCacheDir()
		sp.Protected = sandbox.DefaultProtected(roots...)
	}
	if c.Sandbox != sandbox.Off {
		agentstart.Secrets(c.Readable, c.SSHAgent).Apply(sp)
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
	d.cmdSandbox = a
	return sp, 0
}
