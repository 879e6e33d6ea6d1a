package childexit

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/acpterm/acpterm/internal/proc/procstat"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start starts sh -c script and reaps it at cleanup.
func start(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// state is the process state letter of pid.
func state(t *testing.T, pid int) byte {
	t.Helper()
	st, err := procstat.Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.State
}

func TestWaitExitCode(t *testing.T) {
	cmd := start(t, "exit 7")
	st, err := Wait(cmd.Process.Pid)
	if err != nil || st != (Status{Code: 7}) {
		t.Fatalf("Wait = %+v, %v; want code 7", st, err)
	}
	if s := state(t, cmd.Process.Pid); s != 'Z' {
		t.Fatalf("state %c after Wait, want the zombie (Z): Wait must not reap", s)
	}
	// The caller reaps it, and sees the same status.
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("reaping: %v, %v", cmd.ProcessState, err)
	}
}

func TestWaitSignal(t *testing.T) {
	cmd := start(t, "kill -KILL $$")
	st, err := Wait(cmd.Process.Pid)
	if err != nil || st != (Status{Signal: syscall.SIGKILL}) {
		t.Fatalf("Wait = %+v, %v; want SIGKILL", st, err)
	}
}

func TestWaitRunning(t *testing.T) {
	// A child still running when Wait starts: the wait parks until it
	// exits, which the test causes only after Wait has been called.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", "read x; exit 3")
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	done := make(chan Status, 1)
	go func() {
		st, err := Wait(cmd.Process.Pid)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st := <-done; st != (Status{Code: 3}) {
		t.Fatalf("Wait = %+v, want code 3", st)
	}
}

func TestWaitNotAChild(t *testing.T) {
	// PID 1 is nobody's child here.
	if _, err := Wait(1); err == nil {
		t.Fatal("Wait(1) succeeded")
	}
}
