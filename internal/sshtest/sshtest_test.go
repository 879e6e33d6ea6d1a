//go:build linux

package sshtest

import (
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart: the server lets the client key in through the config, and
// Running sees the environment of what runs there.
func TestStart(t *testing.T) {
	if why := Missing(); why != "" {
		t.Skip(why)
	}
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := exec.Command("ssh", append(s.SSHArgs(), Host, "echo $USER on $SSH_CONNECTION; echo GORACE=$GORACE")...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), s.User+" on 127.0.0.1 ") || !strings.HasSuffix(string(out), "\nGORACE=atexit_sleep_ms=0\n") {
		t.Errorf("ssh ran %q", out)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"SSHTEST_MARK=x1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if got := Running("SSHTEST_MARK", "x1"); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Errorf("Running = %v, want [%d]", got, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left := WaitNoneRunning("SSHTEST_MARK", "x1", 0); len(left) > 0 {
		t.Errorf("after kill and wait, Running = %v", left)
	}
}
