package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as an agent process: with ACPTERM_TEST_AGENT set,
// TestMain serves minimalAgent on stdin/stdout instead of running tests.
const testAgentEnv = "ACPTERM_TEST_AGENT"

func runAsTestAgent() bool {
	mode, ok := os.LookupEnv(testAgentEnv)
	if !ok {
		return false
	}
	switch mode {
	case "stubborn": // ignores stdin's end and SIGTERM: only SIGKILL stops it
		signal.Ignore(syscall.SIGTERM)
		fallthrough
	case "linger": // ignores stdin's end, stops on SIGTERM
		conn := NewAgentConn(minimalAgent{}, os.Stdin, os.Stdout, nil)
		<-conn.Done()
		waitForSignal()
	case "asker": // asks for permission in session/new, exits at stdin's end
		a := &askerAgent{}
		conn := NewAgentConn(a, os.Stdin, os.Stdout, nil)
		a.conn.Store(conn)
		conn.Wait()
	case "parent": // starts a contained `sleep 300`, prints its pid, waits
		cc, err := StartAgent(exec.Command("sleep", "300"), minimalClient{}, &ConnOptions{Contain: true})
		if err != nil {
			os.Exit(5)
		}
		fmt.Println(cc.proc.cmd.Process.Pid)
		waitForSignal()
	case "crash": // answers initialize, then exits with status 3
		conn := NewAgentConn(crashAgent{}, os.Stdin, os.Stdout, nil)
		conn.Wait()
	case "orphan": // like crash, leaving a `sleep 300` that holds its stdout
		conn := NewAgentConn(orphanAgent{}, os.Stdin, os.Stdout, nil)
		conn.Wait()
	default:
		conn := NewAgentConn(minimalAgent{}, os.Stdin, os.Stdout, nil)
		conn.Wait()
	}
	os.Exit(0)
	return true
}

// waitForSignal blocks until a signal ends the process. Not select {}:
// with no other goroutine left, the runtime calls that a deadlock and exits
// with status 2 (only under -race do its extra threads hide it). A read
// from a pipe that nobody writes parks in the network poller instead,
// which the runtime does not count as a deadlock.
func waitForSignal() {
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(4)
	}
	_, _ = r.Read(make([]byte, 1))
	// Never reached. Using w after the read keeps the garbage collector
	// from closing it (os.File has a finalizer), which would end the read.
	w.Close()
	os.Exit(4)
}

type crashAgent struct{ minimalAgent }

// askerAgent sends session/request_permission from session/new, without
// waiting for the answer.
type askerAgent struct {
	minimalAgent
	conn atomic.Pointer[AgentConn]
}

func (a *askerAgent) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	go func() {
		_, _ = a.conn.Load().RequestPermission(context.Background(), &RequestPermissionRequest{SessionID: "s"})
	}()
	return &NewSessionResponse{SessionID: "s"}, nil
}

func (crashAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	os.Exit(3)
	return nil, nil
}

type orphanAgent struct{ minimalAgent }

// NewSession starts a child that inherits the agent's stdout and stderr,
// prints its pid on stderr and exits with status 3 without answering.
func (orphanAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	cmd := exec.Command("sleep", "300")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		os.Exit(5)
	}
	fmt.Fprintln(os.Stderr, cmd.Process.Pid)
	os.Exit(3)
	return nil, nil
}

func startTestAgent(t *testing.T, mode string) *ClientConn {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), testAgentEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(nil))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// Shortened waits of ClientConn.Close, so that a test of a lingering agent
// takes a fraction of a second.
const (
	testTerminateDuration = 200 * time.Millisecond
	testHandlerWait       = 200 * time.Millisecond
)

// shortShutdown returns opts (nil: new options) with the shortened waits.
func shortShutdown(opts *ConnOptions) *ConnOptions {
	if opts == nil {
		opts = &ConnOptions{}
	}
	opts.TerminateDuration = testTerminateDuration
	opts.HandlerWait = testHandlerWait
	return opts
}

// Close shuts the agent down, and reports the signals it had to send.
func TestStartAgentShutdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode     string
		wantSig  syscall.Signal // 0: a clean exit after stdin closed
		wantSays string         // in Close's error
	}{
		{"polite", 0, ""},
		{"linger", syscall.SIGTERM, "exited on SIGTERM"},
		{"stubborn", syscall.SIGKILL, "killed (SIGKILL)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cc := startTestAgent(t, tc.mode)
			ctx := context.Background()
			if _, err := cc.Initialize(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"}); err != nil {
				t.Fatal(err)
			}
			closeErr := cc.Close()
			if signalled := errors.Is(closeErr, ErrAgentSignalled); signalled != (tc.wantSig != 0) {
				t.Fatalf("Close: %v; reports a signal: %v, want %v", closeErr, signalled, tc.wantSig != 0)
			}
			// SIGTERM is a normal end for many agents: only SIGKILL
			// is ErrAgentKilled.
			if killed := errors.Is(closeErr, ErrAgentKilled); killed != (tc.wantSig == syscall.SIGKILL) {
				t.Fatalf("Close: %v; matches ErrAgentKilled: %v, want %v", closeErr, killed, tc.wantSig == syscall.SIGKILL)
			}
			if tc.wantSig == 0 && closeErr != nil {
				t.Fatalf("Close: %v, want nil", closeErr)
			}
			if tc.wantSig != 0 && !strings.Contains(closeErr.Error(), tc.wantSays) {
				t.Errorf("Close: %q, want it to say %q", closeErr, tc.wantSays)
			}
			<-cc.Exited()
			err := cc.ExitError()
			var ee *exec.ExitError
			switch {
			case tc.wantSig == 0 && err != nil:
				t.Fatalf("exit: %v, want a clean exit", err)
			case tc.wantSig != 0 && !errors.As(err, &ee):
				t.Fatalf("exit: %v, want killed by %v", err, tc.wantSig)
			case tc.wantSig != 0:
				ws := ee.Sys().(syscall.WaitStatus)
				if !ws.Signaled() || ws.Signal() != tc.wantSig {
					t.Fatalf("exit status %v, want killed by %v", ws, tc.wantSig)
				}
			}
			if err := cc.Close(); err != closeErr {
				t.Fatalf("second Close: %v, want the first one's %v", err, closeErr)
			}
		})
	}
}

func TestStartAgentCrash(t *testing.T) {
	t.Parallel()
	cc := startTestAgent(t, "crash")
	defer cc.Close()
	ctx := context.Background()
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"})
	if !errors.Is(err, ErrConnClosed) {
		t.Fatalf("call to a crashing agent: %v, want ErrConnClosed", err)
	}
	<-cc.Exited()
	var ee *exec.ExitError
	if err := cc.ExitError(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit error %v, want status 3", err)
	}
}

func TestStartAgentMissingBinary(t *testing.T) {
	t.Parallel()
	_, err := StartAgent(exec.Command("/nonexistent/agent"), minimalClient{}, nil)
	if err == nil {
		t.Fatal("StartAgent of a missing binary succeeded")
	}
}

// stuckClient's permission handler never returns until released, whatever
// its context says: a handler blocked in the kernel.
type stuckClient struct {
	minimalClient
	entered, release chan struct{}
}

func (c stuckClient) RequestPermission(context.Context, *RequestPermissionRequest) (*RequestPermissionResponse, error) {
	close(c.entered)
	<-c.release
	return nil, errors.New("released")
}

// Close is bounded even when a request handler never returns: it gives up
// on it after ConnOptions.HandlerWait and says so.
func TestStartAgentCloseAbandonsStuckHandler(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testAgentEnv+"=asker", "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	client := stuckClient{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(client.release) // lets the abandoned handler, and Close's goroutine, end
	cc, err := StartAgent(cmd, client, shortShutdown(&ConnOptions{Contain: true}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	<-client.entered
	began := time.Now()
	err = cc.Close()
	took := time.Since(began)
	if !errors.Is(err, ErrHandlersRunning) {
		t.Errorf("Close with a stuck handler: %v, want ErrHandlersRunning", err)
	}
	// The agent exits at stdin's end; then only the handler is waited for.
	if bound := testTerminateDuration + testHandlerWait + time.Second; took > bound {
		t.Errorf("Close took %v, want at most %v", took, bound)
	}
	if err := cc.Close(); !errors.Is(err, ErrHandlersRunning) {
		t.Errorf("second Close: %v, want the first one's error", err)
	}
	<-cc.Exited()
	if err := cc.ExitError(); err != nil {
		t.Errorf("agent exit: %v, want a clean exit", err)
	}
}
