package main

import (
	"strings"
	"testing"
)

// TestRunPTY: with --pty the commands the agent asks acpterm for run on
// a pseudo-terminal, sandboxed as ever, and the agent reads the rendered
// text. With --remote, on the target: TestRunPTYRemoteSSH.
func TestRunPTY(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{plain: true}, "run", "--pty", "--approve-all", "-p",
		"tty; test -t 0 && test -t 1 && echo on-a-tty; printf 'a 10%%\\rb 100%%\\n'; touch /outside-acpterm-pty",
		"--", acptermBin, "agent", "--keep-going")
	if r.code == 0 {
		t.Errorf("exit 0, want the failed write outside to fail the run\nstdout:\n%s", r.stdout)
	}
	mustContain(t, "stdout", r.stdout, "│ /dev/pts/", "│ on-a-tty\n", "│ b 100%\n", "Read-only file system")
	if strings.Contains(r.stdout, "│ a 10%") {
		t.Errorf("the agent read the raw bytes, not the screen:\n%s", r.stdout)
	}
}
