package acp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// Bounds of the orderly shutdown of an agent process started by StartAgent
// (variables so that tests can shorten them).
var (
	stdinCloseWait = 2 * time.Second // after closing its stdin
	sigtermWait    = 2 * time.Second // after SIGTERM, before SIGKILL
	agentWaitDelay = 2 * time.Second // cmd.WaitDelay, when the caller left it zero
)

// StartAgent starts cmd as an ACP agent and returns a client connection over
// its stdin and stdout. cmd.Stdin and cmd.Stdout must be nil; cmd.Stderr is
// left as the caller set it (the agent's log stream; nil discards it).
// ClientConn.Close shuts the agent down in order: close its stdin, wait, send
// SIGTERM, wait, send SIGKILL; on Unix, an agent started as the leader of its
// own process group (cmd.SysProcAttr.Setpgid) gets the signals with its whole
// group. ClientConn.Done is closed when the agent's stdout ends, which is
// usually when it exits.
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
		cmd.WaitDelay = agentWaitDelay
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("acp: start agent %s: %w", cmd.Path, err)
	}
	stdin, stdout := inW, outR
	p := &agentProcess{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go p.wait()
	return newClientConn(client, stdout, stdin, opts, p), nil
}

// agentProcess owns an agent subprocess and its one Wait call.
type agentProcess struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	exited  chan struct{}
	waitErr error

	once sync.Once
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

func (p *agentProcess) shutdown(rpc *jsonrpc2.Conn) error {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(stdinCloseWait):
			p.signal(false)
			select {
			case <-p.exited:
			case <-time.After(sigtermWait):
				p.signal(true)
				<-p.exited
			}
		}
		// The pipes are closed by now, so what Close reports about them says
		// nothing; the process's fate is in ExitError.
		_ = rpc.Close()
	})
	return nil
}
