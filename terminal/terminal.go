package terminal

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"github.com/acpterm/acpterm/sandbox"
)

// Info describes a terminal as it was created.
type Info struct {
	SessionID acp.SessionID
	// TerminalID is "" when Info is passed to Policy.Decide: the terminal
	// does not exist yet.
	TerminalID acp.TerminalID
	// Command, Args and Env are the request's.
	Command string
	Args    []string
	Env     []EnvVar
	// Cwd is the directory the command runs in: absolute, and with
	// symlinks resolved when Policy.Roots is set.
	Cwd string
	// Argv is what runs: the shell invocation of a shell line
	// (e.g. ["/bin/bash", "-c", "make test"]) or the resolved executable
	// path followed by Args.
	Argv []string
	// Shell reports that Command is run as a shell line (Args was empty).
	Shell bool
	// Stdin reports that the command's stdin is a pipe that Manager.Write
	// writes (Request.Stdin), not /dev/null.
	Stdin bool
	// PTY is the size a PTY terminal was created with (Request.PTY, the
	// defaults filled in); nil for pipes.
	PTY *Size
	// OutputByteLimit is the effective limit: the request's, clamped to the
	// ceiling.
	OutputByteLimit uint64
	// PID of the command's process (0 in Policy.Decide).
	PID     int
	Started time.Time
	// Display marks a terminal that no Manager runs: one an agent runs
	// itself and streams to the client for display only. A host that
	// renders such terminals beside its own sets it; a Manager never does.
	Display bool
	// Where names the machine, container or pod the command runs on, for
	// a terminal that a host runs elsewhere (an exec server's, e.g.
	// "ssh://devbox"); "" for this machine. A Manager never sets it.
	Where string
	// ToolCall names the agent's tool call a host shows the terminal
	// under, for a terminal the agent did not embed in a tool call's
	// content itself but said, through another channel, which call it
	// came from (an MCP tools/call's _meta). A host that checked the
	// tool call is the agent's, running in the terminal's session, sets
	// it on a second EventCreated; a Manager never does.
	ToolCall acp.ToolCallID
	// Sandbox is what confines the command, as sandbox.Policy.Wrap
	// arranged it (with BestEffort, Missing names what the kernel could
	// not give); nil when Policy.Sandbox is nil, and in Policy.Decide.
	// It is shared by the copies of Info: do not modify it.
	Sandbox *sandbox.Applied
}

// ExitStatus is how a command ended. It is the protocol's own type,
// acp.TerminalExitStatus, so what Wait returns is what terminal/output and
// terminal/wait_for_exit send: ExitCode for a command that exited, Signal
// (the POSIX name, "SIGTERM", "SIGKILL") and a nil ExitCode for one a
// signal ended. Its String method words it ("exit 3", "killed by
// SIGTERM"). Whether Policy.Timeout killed the command is no part of it,
// since the protocol has no field for that: Output.TimedOut and
// Event.TimedOut tell the host.
type ExitStatus = acp.TerminalExitStatus

// Output is what terminal/output returns.
type Output struct {
	// Text is the newest output of stdout and stderr, as valid UTF-8 of
	// at most OutputByteLimit bytes (see the package doc).
	Text string
	// Truncated reports that older output was dropped; it stays true.
	Truncated bool
	// ExitStatus is nil while the command runs.
	ExitStatus *ExitStatus
	// TimedOut reports, once ExitStatus is set, that Policy.Timeout
	// expired and the manager killed the command. The agent sees only
	// the signal (or the exit code, if the command caught SIGTERM and
	// exited), so it is not sent on the wire.
	TimedOut bool
}

// Snapshot is a terminal's state for a host's UI. Unlike Output it is
// also available for a while after release (Options.RetainBytes).
type Snapshot struct {
	Info
	Output
	Released bool
}

// term is one terminal: a started command, its output and its status.
type term struct {
	m    *Manager
	info Info
	key  string // session + "\x00" + terminal ID
	proc *proc
	pr   *os.File   // read end of the command's stdout/stderr pipe
	tmp  string     // the command's private TMPDIR, removed at release; "" for none
	in   *stdinPipe // the write end of the command's stdin; nil for /dev/null
	pty  *ptyTerm   // nil for pipes; pr is then the pty's master

	exited     chan struct{} // the command's process exited
	readerDone chan struct{} // the reader stopped (EOF, or drained after the exit)
	done       chan struct{} // status is set
	status     *ExitStatus   // written once, before done is closed
	timer      *time.Timer   // Policy.Timeout
	wg         sync.WaitGroup

	mu         sync.Mutex
	out        *tail
	killing    bool
	timedOut   bool
	reaped     bool // the process is about to be reaped: its IDs may name others soon (see KillAll)
	released   bool
	subs       []*Subscription // subscribed to this terminal only
	cache      string
	cacheTrunc bool
	cacheTotal uint64
	cacheFinal bool
	cacheOK    bool
}

func termKey(sessionID acp.SessionID, terminalID acp.TerminalID) string {
	return string(sessionID) + "\x00" + string(terminalID)
}

// newTerminalID makes a terminal ID: 64 random bits, so IDs are not
// guessable and, for all practical purposes, never repeat.
func newTerminalID() acp.TerminalID { return acp.TerminalID("term_" + randhex.String(8)) }

// run starts the terminal's goroutines: the output reader, the exit
// waiter and, with a timeout, its timer.
func (t *term) run() {
	t.wg.Add(2)
	if d := t.m.cfg.timeout; d > 0 {
		t.timer = time.AfterFunc(d, func() { t.startKill(true) })
	}
	go t.readLoop()
	go t.waitLoop()
}

// readLoop copies the pipe into the tail buffer and out to subscribers
// until EOF, or until waitLoop, once the command's process has exited,
// tells it to stop waiting (a read deadline in the past); it then reads
// what the pipe holds without waiting for more (see drainReady).
func (t *term) readLoop() {
	defer t.wg.Done()
	defer close(t.readerDone)
	read := copyPipe
	if t.pty != nil {
		read = copyPTY
	}
	buf, err := read(t.pr, t.write)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline only means "stop waiting": what the command wrote
		// before it exited is in the pipe, however late this goroutine got
		// to run.
		_ = t.pr.SetReadDeadline(time.Time{})
		drainReady(t.pr, buf, time.Now().Add(t.m.cfg.drain), t.write)
	}
}

func (t *term) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out.Write(p)
	if t.pty != nil {
		t.pty.render(p)
	}
	if t.m.hasSubscribers(t) {
		t.publishLocked(Event{Kind: EventOutput, Data: p}) // each subscription copies it
	}
}

// waitLoop waits for the command's process to exit, lets the reader take
// what is left in the pipe, and publishes the status.
//
// Why the pipe need not be waited on: a write to a pipe is complete when
// write(2) returns, so once the process has exited everything it wrote,
// and everything written by the descendants it waited for (`a | b`), is
// in the pipe buffer. Reading until the pipe is empty captures it all;
// descendants that still hold the pipe (`sleep 30 &`) are not waited for,
// and their later output is not captured. A descendant that keeps the
// pipe full cannot stretch the drain beyond DrainTimeout.
func (t *term) waitLoop() {
	defer t.wg.Done()
	st, err := t.proc.wait()
	if err != nil {
		t.m.cfg.logf("terminal %s: waiting for pid %d: %v", t.info.TerminalID, t.info.PID, err)
	}
	close(t.exited)
	if t.timer != nil {
		t.timer.Stop()
	}
	// A deadline already passed wakes a reader parked in the poller at
	// once; it then drains without blocking (readLoop).
	if t.pr.SetReadDeadline(time.Now()) == nil {
		<-t.readerDone
	} else {
		// No deadlines on this platform's pipes (Windows): wait for EOF at
		// most DrainTimeout; the reader ends when the last writer closes
		// the pipe.
		tm := time.NewTimer(t.m.cfg.drain)
		select {
		case <-t.readerDone:
		case <-tm.C:
		}
		tm.Stop()
	}
	t.mu.Lock()
	t.status = &st
	close(t.done)
	t.publishLocked(Event{Kind: EventExited, Status: &st, TimedOut: t.timedOut})
	t.mu.Unlock()
}

// startKill begins kill: SIGTERM, KillGrace, SIGKILL. It does nothing once
// the command has exited or a kill is under way.
func (t *term) startKill(timedOut bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.exited:
		return
	default:
	}
	if t.killing {
		return
	}
	t.killing, t.timedOut = true, timedOut
	// waitLoop holds the WaitGroup until after exited is closed, so this
	// Add cannot race with a Wait that saw a zero counter.
	t.wg.Add(1)
	go t.killLoop()
}

func (t *term) killLoop() {
	defer t.wg.Done()
	t.proc.terminate()
	tm := time.NewTimer(t.m.cfg.grace)
	select {
	case <-t.exited:
	case <-tm.C:
	}
	tm.Stop()
	// Also when the command exited within the grace period: whatever it
	// left behind in its group or cgroup goes now.
	t.proc.kill()
}

// outputLocked renders terminal/output. The text is cached until more
// output arrives, so polling a large, idle buffer costs nothing.
func (t *term) outputLocked() Output {
	final := t.isDone()
	if !t.cacheOK || t.cacheTotal != t.out.Total() || t.cacheFinal != final {
		if t.pty != nil {
			t.cache, t.cacheTrunc = t.pty.text()
		} else {
			t.cache, t.cacheTrunc = t.out.Text(final)
		}
		t.cacheTotal, t.cacheFinal, t.cacheOK = t.out.Total(), final, true
	}
	o := Output{Text: t.cache, Truncated: t.cacheTrunc}
	if final {
		st := *t.status
		o.ExitStatus, o.TimedOut = &st, t.timedOut
	}
	return o
}

func (t *term) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// publishLocked sends ev to the terminal's subscribers and to the
// manager's subscriptions that cover its session.
func (t *term) publishLocked(ev Event) {
	ev.SessionID, ev.TerminalID = t.info.SessionID, t.info.TerminalID
	for _, s := range t.subs {
		s.deliver(ev, t.key)
	}
	for _, s := range t.m.wideSubs() {
		if s.sessionID == "" || s.sessionID == t.info.SessionID {
			s.deliver(ev, t.key)
		}
	}
}
