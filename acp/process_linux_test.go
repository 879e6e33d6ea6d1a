package acp

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/expect"
	"github.com/acpterm/acpterm/internal/proctest"
)

// An agent that leads its own process group is shut down with its group:
// what it started does not outlive it.
func TestStartAgentSignalsItsGroup(t *testing.T) {
	shortenShutdown(t)
	// Not an ACP agent: a shell that ignores its stdin's end and waits on
	// a child, printing the child's pid to stderr.
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! >&2; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	<-cc.Exited()
	var ee *exec.ExitError
	if err := cc.ExitError(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("agent exit: %v, want killed by SIGTERM", err)
	}
	if err := proctest.WaitExit([]int{child}, 5*time.Second); err != nil {
		t.Fatalf("the agent's child survived its shutdown: %v", err)
	}
}

// An agent that exits while a child of its keeps its stderr open: with
// cmd.Stderr not a file, Exited must not wait for the child.
func TestStartAgentExitedDespiteChildHoldingStderr(t *testing.T) {
	shortenShutdown(t)
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! >&2")
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	defer func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = proctest.WaitExit([]int{child}, 5*time.Second)
	}()
	select {
	case <-cc.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("Exited waited for the agent's child")
	}
	if err := cc.ExitError(); !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("ExitError = %v, want exec.ErrWaitDelay", err)
	}
}
