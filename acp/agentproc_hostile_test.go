//go:build linux

package acp

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/expect"
	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// An agent that exits as soon as its stdin closes, leaving a child that
// holds its stderr open: cmd.Wait then waits out WaitDelay for the copy of
// stderr, but the agent itself is gone. Close must neither signal it (its
// pid is reaped, and its group id free for reuse) nor report it as
// signalled: it exited on its own, as ExitError says. What it left behind
// is still taken.
func TestStartAgentCloseExitedAgentWithChildHoldingStderr(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! >&2; cat >/dev/null")
	cmd.WaitDelay = time.Second
	stderr := expect.NewBuffer()
	cmd.Stderr = stderr
	cc, err := StartAgent(cmd, minimalClient{}, shortShutdown(&ConnOptions{Contain: true}))
	if err != nil {
		t.Fatal(err)
	}
	stderr.Expect(t, "\n", 10*time.Second)
	child, err := strconv.Atoi(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("agent printed %q", stderr.String())
	}
	defer func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = proctest.WaitExit([]int{child}, 5*time.Second)
	}()
	if err := cc.Close(); err != nil {
		t.Errorf("Close: %v, want nil: the agent exited at its stdin's end", err)
	}
	if err := proctest.WaitExit([]int{child}, 5*time.Second); err != nil {
		t.Errorf("the agent's child survived Close: %v", err)
	}
	<-cc.Exited()
	if err := cc.ExitError(); err != nil {
		t.Errorf("ExitError: %v, want nil", err)
	}
}
