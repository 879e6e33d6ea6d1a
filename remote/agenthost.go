package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// AgentHostOptions tune HostAgent. The zero value is ready to use.
type AgentHostOptions struct {
	// Grace is how long the agent has to end once its stdin has ended
	// before it is sent SIGTERM, and again before SIGKILL. 0 means
	// DefaultAgentGrace.
	Grace time.Duration
	// Logf, when set, is told what could not be cleaned up.
	Logf func(format string, args ...any)
	// Command, when set, makes the agent's process from argv instead of
	// exec.Command (acpterm's sandbox wraps it there). HostAgent sets its
	// stdio and adds its containment to the SysProcAttr it has.
	Command func(argv []string) (*exec.Cmd, error)
}

// DefaultAgentGrace is AgentHostOptions.Grace when it is zero: an ACP
// agent ends when its stdin does, and one that is slow to is given this
// long, twice, as acpterm gives an agent on its own machine.
const DefaultAgentGrace = 2 * time.Second

// ErrAgentHost is returned by HostAgent where agents cannot be hosted
// (a system without process groups).
var ErrAgentHost = errors.New("remote: agents cannot be hosted on this system")

// HostAgent runs argv as an ACP agent for a client on the other side of a
// transport (acpterm exec-server --agent, which acpterm run --remote-agent
// starts on the target): the agent reads what HostAgent reads from stdin
// and writes to stdout and stderr itself. It runs contained, as acpterm
// contains an agent on its own machine: in a cgroup of its own where the
// tree is writable (Linux), else in its own process group, and it dies
// with HostAgent's process (Linux). This is the dead-man rule that the
// transport alone lacks: when stdin ends (the client closed it, or the
// connection dropped) the agent's stdin is closed, and an agent still
// there after the grace gets SIGTERM, then SIGKILL, its whole cgroup or
// group with it; once the agent has exited, whatever it left behind is
// killed. ctx ending counts as the end of stdin.
//
// It returns the agent's exit code (128+N for a death by signal N), once
// the agent and what it started are gone. A stdin that is an io.Closer
// is closed before HostAgent returns, so that the copy of it ends.
func HostAgent(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, opts *AgentHostOptions) (int, error) {
	if len(argv) == 0 || argv[0] == "" {
		return 0, errors.New("remote: no agent to run")
	}
	var o AgentHostOptions
	if opts != nil {
		o = *opts
	}
	if o.Grace <= 0 {
		o.Grace = DefaultAgentGrace
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if o.Command != nil {
		var err error
		if cmd, err = o.Command(argv); err != nil {
			return 0, fmt.Errorf("remote: the agent %s: %w", argv[0], err)
		}
	}
	// A pipe of our own for stdin: the agent must see its end when ours
	// ends, and a start may be retried on a copy of cmd (startHosted).
	inR, in, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, stdout, stderr
	h, err := startHosted(cmd, logf)
	inR.Close()
	if err != nil {
		in.Close()
		return 0, fmt.Errorf("remote: starting the agent %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stdinDone := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(in, stdin)
		_ = in.Close()
		close(stdinDone)
	}()
	select {
	case <-exited:
	case <-stdinDone:
		h.stop(exited, o.Grace)
	case <-ctx.Done():
		_ = in.Close()
		h.stop(exited, o.Grace)
	}
	<-exited
	if err := h.killRest(); err != nil {
		logf("agent host: what the agent left: %v", err)
	}
	if c, ok := stdin.(io.Closer); ok {
		_ = c.Close()
		<-copied
	}
	return exitCode(waitErr), nil
}

// stop ends the agent once its stdin has: it waits grace for the agent to
// exit, signals it SIGTERM, waits grace again, then kills it.
func (h *hosted) stop(exited <-chan struct{}, grace time.Duration) {
	for _, sig := range []hostSignal{sigTerm, sigKill} {
		t := time.NewTimer(grace)
		select {
		case <-exited:
			t.Stop()
			return
		case <-t.C:
		}
		h.signal(sig)
	}
}

// exitCode is the status a shell would give the agent's end.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if sig, ok := signalOf(ee); ok {
			return 128 + sig
		}
		return ee.ExitCode()
	}
	return 1
}
