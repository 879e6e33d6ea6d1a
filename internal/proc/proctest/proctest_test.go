//go:build linux

package proctest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestWaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if !Alive(pid) || len(LiveInGroup(pid)) != 1 {
		t.Fatalf("alive=%v group=%v", Alive(pid), LiveInGroup(pid))
	}
	if err := WaitExit([]int{pid}, 50*time.Millisecond); err == nil {
		t.Fatal("WaitExit returned for a running sleep")
	}
	_ = cmd.Process.Kill()
	if err := WaitGroupGone(pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatal("killed sleep still alive")
	}
	<-done
	if err := WaitExit([]int{pid}, time.Second); err != nil {
		t.Fatalf("reaped pid: %v", err)
	}
}
