package acp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// Defaults and fixed bounds of the orderly shutdown of an agent process
// started by StartAgent. The first two are ConnOptions fields.
const (
	defaultTerminateDuration = 2 * time.Second // ConnOptions.TerminateDuration
	defaultHandlerWait       = 1 * time.Second // ConnOptions.HandlerWait
	// killWait is how long the exit may take to be seen after SIGKILL. Not
	// a setting: past it the process is stuck in the kernel, and waiting
	// longer would not help.
	killWait = 2 * time.Second
	// defaultWaitDelay is cmd.WaitDelay when the caller left it zero.
	defaultWaitDelay = 2 * time.Second
	// Once the agent process has exited, its stdout is read on only while
	// data keeps coming: what the agent wrote before it exited is in the
	// pipe already, so a read that waits exitDrainIdle for more finds the
	// pipe empty, and a process the agent left behind holding the pipe
	// open cannot keep the connection going. exitDrainMax caps the drain
	// against one that keeps writing.
	exitDrainIdle = 200 * time.Millisecond
	exitDrainMax  = 1 * time.Second
)

// ErrHandlersRunning is returned (wrapped) by ClientConn.Close of a
// StartAgent connection when request handlers did not return within
// ConnOptions.HandlerWait of their contexts being cancelled: Close stops
// waiting for them rather than hang, and they finish, or not, on their own.
var ErrHandlersRunning = errors.New("acp: request handlers still running")

// ErrAgentSignalled is returned (wrapped) by ClientConn.Close of a
// StartAgent connection when the agent did not exit within
// ConnOptions.TerminateDuration of its stdin closing, so that Close had to
// send it SIGTERM, and SIGKILL if that did not do. The error says which;
// when SIGKILL was needed it also matches ErrAgentKilled. An agent that was
// already gone, or that Kill had killed, is not reported: its fate is in
// ExitError.
//
// Many agents stop on SIGTERM only, and leave their stdin unread: for them
// an error that matches ErrAgentSignalled but not ErrAgentKilled is their
// normal end, which a host may choose not to show.
var ErrAgentSignalled = errors.New("acp: the agent had to be signalled")

// ErrAgentKilled is returned (wrapped) by ClientConn.Close of a StartAgent
// connection when the agent did not exit on SIGTERM either, so that Close
// had to kill it (SIGKILL), or when it outlived even that. Every error that
// matches it matches ErrAgentSignalled too.
var ErrAgentKilled error = &subError{msg: "acp: the agent had to be killed", parent: ErrAgentSignalled}

// subError is a sentinel error that also matches a broader one.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string        { return e.msg }
func (e *subError) Is(target error) bool { return target == e.parent }

// StartAgent starts cmd as an ACP agent and returns a client connection over
// its stdin and stdout. cmd.Stdin and cmd.Stdout must be nil; cmd.Stderr is
// left as the caller set it (the agent's log stream; nil discards it).
//
// The connection ends (ClientConn.Done is closed, calls in flight fail with
// ErrConnClosed) when the agent's stdout ends, or soon after the agent
// process exits, whichever comes first: the process that cmd started is
// watched itself (through a pidfd on Linux, else through its Wait), so a
// child of the agent that holds its stdout open cannot keep a dead agent's
// connection alive. What the agent wrote before it exited is still read:
// the connection ends once its stdout has been silent for 200 ms, or 1 s
// after the exit at the latest. An agent started through a wrapper that
// forks the real agent and exits (a daemonizing launcher) is therefore
// taken for dead; start the agent itself, or a wrapper that waits for it.
//
// ClientConn.Close shuts the agent down in order and in bounded time: close
// its stdin, wait up to opts.TerminateDuration (2 s by default), send
// SIGTERM, wait as long again, send SIGKILL, wait up to 2 s for the exit,
// then stop serving, waiting at most opts.HandlerWait (1 s) more for request
// handlers, whose contexts are cancelled, to return. Close reports each step
// that did not go as asked: an agent that had to be signalled
// (ErrAgentSignalled), one that outlived SIGKILL, abandoned handlers
// (ErrHandlersRunning), what containment could not clean up.
// ClientConn.Kill kills the agent at once. On Unix, an agent that leads its
// own process group (cmd.SysProcAttr.Setpgid) gets the signals with its
// whole group.
//
// With opts.Contain the agent is contained: StartAgent makes it lead its own
// process group and, on Linux, sets PR_SET_PDEATHSIG to SIGKILL, so that
// the agent dies with the calling process, and starts it in a cgroup v2 of
// its own when the cgroup tree is writable (named and placed as described
// in internal/proc/cgroup: acpterm-PID-START-agent-RANDOM under the caller's
// cgroup; the cgroups of callers that were killed are removed then). Kill
// and the SIGKILL step reach the whole cgroup, setsid daemons included, and
// Close kills whatever the agent left behind, cgroup or process group, and
// removes the cgroup. Where no cgroup can be made the process group is all
// there is, which descendants that call setsid leave.
//
// PR_SET_PDEATHSIG fires when the OS thread that started the agent exits,
// not the process (golang/go#27505). The Go runtime ends a thread only when
// a goroutine exits while locked to it (runtime.LockOSThread), so with
// Contain never call StartAgent from such a goroutine.
//
// When cmd.Stderr is not an *os.File, os/exec copies it through a pipe that
// the agent's children inherit, and waiting for the agent would also wait for
// them. So StartAgent sets cmd.WaitDelay to 2 s when it is zero: Exited is
// closed at most that long after the agent exits, and ExitError is then
// exec.ErrWaitDelay if the agent itself exited cleanly.
func StartAgent(cmd *exec.Cmd, client Client, opts *ConnOptions) (*ClientConn, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("acp: StartAgent needs cmd.Stdin and cmd.Stdout unset")
	}
	contain := opts != nil && opts.Contain
	if contain {
		ownGroup(cmd)
		setPdeathsig(cmd)
	}
	// Our own pipes rather than cmd.StdinPipe/StdoutPipe: cmd.Wait closes
	// those as soon as the process exits, which can drop its last messages
	// before the reader has them. With os.Pipe the reader sees every byte,
	// then EOF.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("acp: agent stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("acp: agent stdout: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = defaultWaitDelay
	}
	var cg string
	if contain {
		cg, err = startContained(cmd, opts.logf)
	} else {
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("acp: start agent %s: %w", cmd.Path, err)
	}
	stdin, stdout := inW, &agentStdout{f: outR}
	p := &agentProcess{
		cmd: cmd, stdin: stdin, exited: make(chan struct{}), contain: contain, cgroup: cg,
		terminate: defaultTerminateDuration, handlerWait: defaultHandlerWait,
	}
	if opts != nil && opts.TerminateDuration > 0 {
		p.terminate = opts.TerminateDuration
	}
	p.termWait = p.terminate
	if opts != nil && opts.TermWait > 0 {
		p.termWait = opts.TermWait
	}
	if opts != nil && opts.HandlerWait > 0 {
		p.handlerWait = opts.HandlerWait
	}
	// The watch starts before anything can reap the agent (p.wait), so
	// that its pid names it alone when the watch begins.
	gone := watchExit(cmd.Process.Pid, p.exited)
	go p.wait()
	go func() {
		<-gone
		stdout.agentExited()
	}()
	return newClientConn(client, stdout, stdin, opts, p), nil
}

// agentStdout is the read end of the agent's stdout. Once the agent has
// exited (agentExited), a read that finds nothing for exitDrainIdle, or
// any read past exitDrainMax after the exit, is the end of the stream,
// whoever else still holds the pipe's write end. Only the connection's
// reader calls Read; agentExited may run at any time.
type agentStdout struct {
	f      *os.File
	exitAt atomic.Int64 // when the agent exited, in Unix nanoseconds; 0 before
}

func (r *agentStdout) Read(b []byte) (int, error) {
	if at := r.exitAt.Load(); at != 0 {
		// The deadline is set before each read, so a reader that was
		// slow to come back still gets what the agent left in the pipe.
		dl := time.Now().Add(exitDrainIdle)
		if end := time.Unix(0, at).Add(exitDrainMax); end.Before(dl) {
			dl = end
		}
		_ = r.f.SetReadDeadline(dl)
	}
	n, err := r.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Only an exited agent's stdout has a deadline.
		return n, io.EOF
	}
	return n, err
}

func (r *agentStdout) Close() error { return r.f.Close() }

// agentExited switches the stream to draining. The deadline set here
// wakes a read already blocked; exitAt, stored first, makes every later
// read set its own. Where pipes take no deadlines (Windows), the stream
// ends only when every writer has closed it, as any pipe does.
func (r *agentStdout) agentExited() {
	now := time.Now()
	r.exitAt.Store(now.UnixNano())
	_ = r.f.SetReadDeadline(now.Add(exitDrainIdle))
}

// agentProcess owns an agent subprocess and its one Wait call.
type agentProcess struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	exited  chan struct{}
	waitErr error
	contain bool   // opts.Contain
	cgroup  string // the agent's cgroup directory; "" when not in one

	terminate   time.Duration // opts.TerminateDuration, or its default
	termWait    time.Duration // opts.TermWait, or terminate
	handlerWait time.Duration // opts.HandlerWait, or its default

	once     sync.Once
	closeErr error
}

func (p *agentProcess) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// Exited is closed once the agent process has exited and been reaped.
func (c *ClientConn) Exited() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.exited
}

// ExitError returns the agent's exit error after Exited is closed: nil for
// a zero exit status, else an *exec.ExitError. It returns nil for a
// connection that StartAgent did not make.
func (c *ClientConn) ExitError() error {
	if c.proc == nil {
		return nil
	}
	select {
	case <-c.proc.exited:
		return c.proc.waitErr
	default:
		return nil
	}
}

// Kill kills the agent at once with SIGKILL, and with it its cgroup or
// process group (see StartAgent), without closing the connection: calls in
// flight fail when the agent's stdout ends, and Close is still needed. It
// is safe to call at any time, any number of times, also concurrently with
// Close. It does nothing for a connection that StartAgent did not make.
func (c *ClientConn) Kill() {
	if c.proc != nil {
		c.proc.signal(true)
	}
}

func (p *agentProcess) shutdown(rpc *jsonrpc2.Conn) error {
	p.once.Do(func() {
		p.closeErr = p.stop()
		// Stop serving: handlers' contexts are cancelled and Close waits
		// for them, which a handler that ignores its context (a read
		// blocked in the kernel) would make endless. Past handlerWait it
		// is left to finish on its own.
		closed := make(chan struct{})
		go func() {
			// The pipes are closed by now, and a write that failed
			// because the agent had gone says nothing ExitError does
			// not, so what Close reports is not news here.
			_ = rpc.Close()
			close(closed)
		}()
		t := time.NewTimer(p.handlerWait)
		defer t.Stop()
		select {
		case <-closed:
		case <-t.C:
			p.closeErr = errors.Join(p.closeErr, fmt.Errorf("%w %s after Close", ErrHandlersRunning, p.handlerWait))
		}
	})
	return p.closeErr
}

// stop ends the agent: stdin closed, SIGTERM, SIGKILL, each step after a
// bounded wait; then, when contained, whatever it left behind is killed
// and its cgroup removed.
func (p *agentProcess) stop() error {
	p.stdin.Close()
	var err error
	if !p.waitExit(p.terminate) {
		pid := p.cmd.Process.Pid
		p.signal(false)
		if p.waitExit(p.termWait) {
			err = fmt.Errorf("%w: pid %d did not exit within %s of its stdin closing; it exited on SIGTERM", ErrAgentSignalled, pid, p.terminate)
		} else {
			p.signal(true)
			if p.waitExit(killWait) {
				err = fmt.Errorf("%w: pid %d did not exit within %s of its stdin closing nor %s of SIGTERM; it was killed (SIGKILL)", ErrAgentKilled, pid, p.terminate, p.termWait)
			} else {
				err = fmt.Errorf("%w: pid %d did not exit within %s of SIGKILL", ErrAgentKilled, pid, killWait)
			}
		}
	}
	if p.contain {
		err = errors.Join(err, p.killRest())
	}
	return err
}

// waitExit waits up to d for the agent to exit and reports whether it did.
func (p *agentProcess) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return p.reaped()
	}
}

// reaped reports whether the agent has exited and been reaped. Exited can
// lag behind that by up to cmd.WaitDelay: cmd.Wait reaps the agent, then
// waits for the copy of a cmd.Stderr that is not a file, which a child of
// the agent can hold open. Such an agent is gone all the same: it must not
// be signalled (its pid, and so its group id, may be reused) nor reported
// as signalled. Where the os package cannot tell (Windows), only Exited
// counts.
func (p *agentProcess) reaped() bool {
	select {
	case <-p.exited:
		return true
	default:
		return errors.Is(p.cmd.Process.Signal(syscall.Signal(0)), os.ErrProcessDone)
	}
}
