//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
)

// TestInteractiveJobsV2: over ACP v2 the agent lists its background work.
// A turn leaves a dev server (`sleep 1000`, the agent's own display
// terminal with capabilities.cancel) running; the line after the turn
// says so, /jobs lists it as one acpterm can stop, /cancel sends
// terminal/cancel and waits for the exit status the agent reports; the
// process is gone, /jobs lists nothing, and nothing is left at exit.
func TestInteractiveJobsV2(t *testing.T) {
	t.Parallel()
	env, log, mark := bgSession(t, "background-local", "pty2")
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "start\r", "started the dev server", "1 still running: /jobs to list, /cancel ID to stop one", "› ")
		pids := listJob(t, s, tty, mark, "agent command ")
		cancelJob(t, s, tty, mark, pids, "agent command sleep 1000", "stopped 1 (agent command sleep 1000): killed by SIGTERM")
		s.send(t, tty, "status\r", "the dev server ended: killed by SIGTERM", "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--protocol", "2", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	mustContain(t, "log", readLog(t, log), "exit:killed by SIGTERM\n")
	if strings.Contains(out, "still running as acpterm exits") {
		t.Fatalf("a stopped terminal listed at exit:\n%q", out)
	}
}
