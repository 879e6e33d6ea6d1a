package acp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
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
)

// ErrHandlersRunning is returned (wrapped) by ClientConn.Close of a
// StartAgent connection when request handlers did not return within
// ConnOptions.HandlerWait of their contexts being cancelled: Close stops
// waiting for them rather than hang, and they finish, or not, on their own.
var ErrHandlersRunning = errors.New("acp: request handlers still running")

// ErrAgentSignalled is returned (wrapped) by ClientConn.Close of a
// StartAgent connection when the agent did not exit within
// ConnOptions.TerminateDuration of its stdin closing, so that Close had to
// send it SIGTERM, and SIGKILL if that did not do. The error says which. An
// agent that was already gone, or that Kill had killed, is not reported:
// its fate is in ExitError.
var ErrAgentSignalled = errors.New("acp: the agent had to be signalled")

// StartAgent starts cmd as an ACP agent and returns a client connection over
// its stdin and stdout. cmd.Stdin and cmd.Stdout must be nil; cmd.Stderr is
// left as the caller set it (the agent's log stream; nil discards it).
// ClientConn.Done is closed when the agent's stdout ends, which is usually
// when it exits.
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
// in internal/cgroup: acpterm-PID-START-agent-RANDOM under the caller's
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
	stdin, stdout := inW, outR
	p := &agentProcess{
		cmd: cmd, stdin: stdin, exited: make(chan struct{}), contain: contain, cgroup: cg,
		terminate: defaultTerminateDuration, handlerWait: defaultHandlerWait,
	}
	if opts != nil && opts.TerminateDuration > 0 {
		p.terminate = opts.TerminateDuration
	}
	if opts != nil && opts.HandlerWait > 0 {
		p.handlerWait = opts.HandlerWait
	}
	go p.wait()
	return newClientConn(client, stdout, stdin, opts, p), nil
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
		if p.waitExit(p.terminate) {
			err = fmt.Errorf("%w: pid %d did not exit within %s of its stdin closing; it exited on SIGTERM", ErrAgentSignalled, pid, p.terminate)
		} else {
			p.signal(true)
			if p.waitExit(killWait) {
				err = fmt.Errorf("%w: pid %d did not exit within %s of its stdin closing nor of SIGTERM; it was killed (SIGKILL)", ErrAgentSignalled, pid, p.terminate)
			} else {
				err = fmt.Errorf("%w: pid %d did not exit within %s of SIGKILL", ErrAgentSignalled, pid, killWait)
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
