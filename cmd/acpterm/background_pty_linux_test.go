//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// bgMark is a mark (bgMarkEnv) unique to one run of one test.
func bgMark(prefix string) string {
	return prefix + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// bgSession is the environment of a session with the fake agent mode,
// a backgrounder whose sleeps carry a fresh mark (bgMark with prefix);
// it returns the environment, the agent's log and the mark.
func bgSession(t *testing.T, mode, prefix string) (env []string, log, mark string) {
	t.Helper()
	mark = bgMark(prefix)
	env, log = sessionEnv(t, mode, t.TempDir())
	return append(env, bgMarkEnv+"="+mark), log, mark
}

// listJob checks, once a turn has left the backgrounder's sleep running,
// that its one process runs and /jobs lists it as job 1 of kind (padded
// as the table shows it), one acpterm can stop; it returns the process.
func listJob(t *testing.T, s *ptyScreen, tty *os.File, mark, kind string) []int {
	t.Helper()
	pids := markedProcesses(t, mark)
	if len(pids) != 1 {
		t.Errorf("the sleep's processes: %v, want one", pids)
	}
	s.send(t, tty, "/jobs\r", "ID   KIND          AGE     CAN STOP WHAT", "1    "+kind, "yes      sleep 1000")
	return pids
}

// cancelJob stops job 1, what (its kind and command), with /cancel and
// checks what follows: stopped (the line /cancel answers), its processes
// pids gone, a second /cancel told it has ended, /jobs listing nothing.
func cancelJob(t *testing.T, s *ptyScreen, tty *os.File, mark string, pids []int, what, stopped string) {
	t.Helper()
	s.send(t, tty, "/cancel 1\r", stopped)
	if err := proctest.WaitExit(pids, 5*time.Second); err != nil {
		t.Errorf("the sleep after /cancel: %v", err)
	}
	if got := markedProcesses(t, mark); len(got) != 0 {
		t.Errorf("still alive after /cancel: %v", got)
	}
	s.send(t, tty, "/cancel 1\r", "acpterm: 1 ("+what+") has ended already (killed by SIGTERM)")
	s.send(t, tty, "/jobs\r", "nothing is running in the background")
}

// TestInteractiveJobs: a turn leaves `sleep 1000` running in a terminal
// the agent does not release. One line says so; /jobs lists it; wrong
// uses of /cancel change nothing; /cancel kills it (the process is gone,
// the agent sees the exit, the terminal stays its to release); /jobs then
// lists nothing, and the session ends with nothing left to say at exit.
func TestInteractiveJobs(t *testing.T) {
	t.Parallel()
	env, log, mark := bgSession(t, "background", "pty")
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "/help\r", "/jobs          list what still runs in the background", "/cancel ID     stop a terminal still running in the background")
		s.send(t, tty, "/jobs\r", "nothing is running in the background")
		s.send(t, tty, "start\r", "allow? [y]es, [n]o, [a]lways")
		s.send(t, tty, "y", "started sleep 1000", "1 still running: /jobs to list, /cancel ID to stop one", "› ")
		pids := listJob(t, s, tty, mark, "terminal      ")
		s.send(t, tty, "/cancel\r", "acpterm: /cancel needs the ID of what to stop; /jobs lists them")
		s.send(t, tty, "/cancel 7\r", "acpterm: nothing running is called 7; /jobs lists what is")
		if got := markedProcesses(t, mark); len(got) != 1 {
			t.Errorf("after the wrong /cancels, the sleep's processes: %v", got)
		}
		cancelJob(t, s, tty, mark, pids, "terminal sleep 1000",
			"stopped 1 (terminal sleep 1000): killed by SIGTERM; the terminal stays until the agent releases it")
		// The agent saw its command exit, as after terminal/kill.
		s.send(t, tty, "status\r", "the sleep ended: killed by SIGTERM", "› ")
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

// TestInteractiveExitLine: Ctrl-D at the prompt leaves the prompt's line,
// as a shell does, so that what acpterm says as it ends (here, the
// terminal still running) starts a line of its own.
func TestInteractiveExitLine(t *testing.T) {
	t.Parallel()
	env, _, _ := bgSession(t, "background", "ptyexit")
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "start\r", "allow? [y]es, [n]o, [a]lways")
		s.send(t, tty, "y", "1 still running: /jobs to list, /cancel ID to stop one", "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	i := strings.Index(out, "still running as acpterm exits")
	if i < 0 {
		t.Fatalf("nothing said at exit:\n%q", out)
	}
	if line := out[strings.LastIndexByte(out[:i], '\n')+1 : i]; strings.Contains(line, "›") {
		t.Errorf("the exit's line starts on the prompt's: %q", line)
	}
}
