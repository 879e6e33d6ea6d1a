package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// TestRunOffersMCPRemoteSSH: acpterm run --mcp --remote ssh://… offers
// the agent the MCP server, whose exec_command runs on the target through
// a real sshd (its directory's marker, ssh's variables), in the sandbox
// there (a write outside is refused), shown as the run's terminal on the
// target; a setsid grandchild it left is gone once the run has ended.
func TestRunOffersMCPRemoteSSH(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	outside := filepath.Join(filepath.Dir(dir), "outside-"+newMark(t))
	mark := newMark(t)
	prompt := "cat marker.txt; echo via ${SSH_CONNECTION%% *}; (echo no > " + outside + ") 2>/dev/null || echo write-refused-$((6*7)); " +
		remoteMarkVar + "=" + mark + " setsid sleep 1121 >/dev/null 2>&1 &"
	args := append([]string{"run", "--mcp", "--format", "json", "--approve-all"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", prompt, "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=mcpclient"}, bound: 60 * time.Second}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "RESULT", "only on the target", "via 127.0.0.1", "write-refused-42")
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("the write outside the target's sandbox went through: %s", outside)
	}
	created := ofKind(parseEvents(t, r.stdout), "terminal_created")
	if len(created) != 1 || created[0].str("where") != "ssh://"+sshtest.Host || created[0].str("cwd") != dir {
		t.Errorf("terminal_created events %v, want the MCP command's, on ssh://%s in %s", created, sshtest.Host, dir)
	}
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
		t.Errorf("left on the target after the run: %v", left)
	}
}

// TestRunPTYRemoteSSH: acpterm run --pty --remote ssh://… runs the
// agent's commands on a pseudo-terminal there: tty names a pts of the
// target, stdout is a terminal, and the agent reads the rendered text.
func TestRunPTYRemoteSSH(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	args := append([]string{"run", "--pty", "--approve-all", "--format", "json"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "tty; test -t 1 && echo interactive; printf 'step 1\\rstep 2\\n'", "--", acptermBin, "agent")
	r := acpterm(t, opts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var out strings.Builder
	for _, o := range ofKind(parseEvents(t, r.stdout), "terminal_output") {
		out.WriteString(o.str("data"))
	}
	mustContain(t, "the terminal's output", out.String(), "/dev/pts/", "interactive")
	// What the agent read (terminal/output, shown in the tool call): the
	// rendered screen, without \r, the progress line at its last state.
	mustContain(t, "stdout", r.stdout, `"text":"`+"```"+`\n/dev/pts/`, `\ninteractive\nstep 2\n`+"```")
}
