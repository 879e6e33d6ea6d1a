//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// markedProcesses lists the live processes whose environment has
// ACPTERM_BG_SLEEP=mark: the backgrounder's sleep of that test.
func markedProcesses(t *testing.T, mark string) []int {
	t.Helper()
	want := []byte("\x00ACPTERM_BG_SLEEP=" + mark + "\x00")
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, dir := range dirs {
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		if proctest.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestInteractiveJobs: a turn leaves `sleep 1000` running in a terminal
// the agent does not release. One line says so; /jobs lists it; wrong
// uses of /cancel change nothing; /cancel kills it (the process is gone,
// the agent sees the exit, the terminal stays its to release); /jobs then
// lists nothing, and the session ends with nothing left to say at exit.
func TestInteractiveJobs(t *testing.T) {
	t.Parallel()
	mark := "pty-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env, log := sessionEnv(t, "background", t.TempDir())
	env = append(env, bgMarkEnv+"="+mark)
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		tty.WriteString("/help\r")
		s.expect(t, "/jobs          list what still runs in the background")
		s.expect(t, "/cancel ID     stop a terminal still running in the background")
		tty.WriteString("/jobs\r")
		s.expect(t, "nothing is running in the background")
		tty.WriteString("start\r")
		s.expect(t, "allow? [y]es, [n]o, [a]lways")
		tty.WriteString("y")
		s.expect(t, "started sleep 1000")
		s.expect(t, "1 still running: /jobs to list, /cancel ID to stop one")
		s.expect(t, "› ")
		pids := markedProcesses(t, mark)
		if len(pids) != 1 {
			t.Errorf("the sleep's processes: %v, want one", pids)
		}
		tty.WriteString("/jobs\r")
		s.expect(t, "ID   KIND          AGE     CAN STOP WHAT")
		s.expect(t, "1    terminal      ")
		s.expect(t, "yes      sleep 1000")
		tty.WriteString("/cancel\r")
		s.expect(t, "acpterm: /cancel needs the ID of what to stop; /jobs lists them")
		tty.WriteString("/cancel 7\r")
		s.expect(t, "acpterm: nothing running is called 7; /jobs lists what is")
		if got := markedProcesses(t, mark); len(got) != 1 {
			t.Errorf("after the wrong /cancels, the sleep's processes: %v", got)
		}
		tty.WriteString("/cancel 1\r")
		s.expect(t, "stopped 1 (terminal sleep 1000): killed by SIGTERM; the terminal stays until the agent releases it")
		if err := proctest.WaitExit(pids, 5*time.Second); err != nil {
			t.Errorf("the sleep after /cancel: %v", err)
		}
		if got := markedProcesses(t, mark); len(got) != 0 {
			t.Errorf("still alive after /cancel: %v", got)
		}
		tty.WriteString("/cancel 1\r")
		s.expect(t, "acpterm: 1 (terminal sleep 1000) has ended already (killed by SIGTERM)")
		tty.WriteString("/jobs\r")
		s.expect(t, "nothing is running in the background")
		// The agent saw its command exit, as after terminal/kill.
		tty.WriteString("status\r")
		s.expect(t, "the sleep ended: killed by SIGTERM")
		s.expect(t, "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	mustContain(t, "log", readLog(t, log), "exit:killed by SIGTERM\n")
	if bytes.Contains([]byte(out), []byte("still running as acpterm exits")) {
		t.Fatalf("a stopped terminal listed at exit:\n%q", out)
	}
}
