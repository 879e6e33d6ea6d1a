package acp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
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
		select {}
	case "crash": // answers initialize, then exits with status 3
		conn := NewAgentConn(crashAgent{}, os.Stdin, os.Stdout, nil)
		conn.Wait()
	default:
		conn := NewAgentConn(minimalAgent{}, os.Stdin, os.Stdout, nil)
		conn.Wait()
	}
	os.Exit(0)
	return true
}

type crashAgent struct{ minimalAgent }

func (crashAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	os.Exit(3)
	return nil, nil
}

func startTestAgent(t *testing.T, mode string) *ClientConn {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), testAgentEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	cc, err := StartAgent(cmd, minimalClient{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func shortenShutdown(t *testing.T) {
	oldStdin, oldTerm, oldDelay := stdinCloseWait, sigtermWait, agentWaitDelay
	stdinCloseWait, sigtermWait, agentWaitDelay = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { stdinCloseWait, sigtermWait, agentWaitDelay = oldStdin, oldTerm, oldDelay })
}

func TestStartAgentShutdown(t *testing.T) {
	shortenShutdown(t)
	for _, tc := range []struct {
		mode    string
		wantSig syscall.Signal // 0: a clean exit after stdin closed
	}{
		{"polite", 0},
		{"linger", syscall.SIGTERM},
		{"stubborn", syscall.SIGKILL},
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
			if err := cc.Close(); err != nil {
				t.Fatalf("Close: %v", err)
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
			if err := cc.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

func TestStartAgentCrash(t *testing.T) {
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
	_, err := StartAgent(exec.Command("/nonexistent/agent"), minimalClient{}, nil)
	if err == nil {
		t.Fatal("StartAgent of a missing binary succeeded")
	}
}
