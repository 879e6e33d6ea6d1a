package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/sshtest"
)

// The tests of what the exec server is told of run's limits and shell.

func init() {
	registerHostile("remote-term", func() int { return serveAgent(&remoteTermAgent{}) })
}

// remoteTermAgent runs each line of its prompt in a terminal, waits for
// its exit and says what it saw: the exit status and output as
// terminal/output gives them, or the error of the wait.
type remoteTermAgent struct{ baseAgent }

func (a *remoteTermAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	say := func(format string, args ...any) error {
		return conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
			Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: fmt.Sprintf(format, args...)}}})
	}
	for _, line := range strings.Split(promptText(req), "\n") {
		if line == "" {
			continue
		}
		term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: line})
		if err != nil {
			if err := say("create: %v\n", err); err != nil {
				return nil, err
			}
			continue
		}
		// Tests that cut the transport mid-command wait for this line:
		// the command runs on the target before its create is answered.
		fmt.Fprintln(os.Stderr, "fake agent: terminal created")
		if _, err := term.WaitForExit(ctx); err != nil {
			if err := say("wait: %v\n", err); err != nil {
				return nil, err
			}
			continue
		}
		out, err := term.Output(ctx)
		if err != nil {
			return nil, err
		}
		status := "none"
		if out.ExitStatus != nil {
			status = out.ExitStatus.String()
		}
		if err := say("exit=%s output=%q truncated=%v\n", status, out.Output, out.Truncated); err != nil {
			return nil, err
		}
		_ = term.Close()
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// TestRemoteSSHTerminalFlags: --output-limit, --timeout and --shell reach
// the exec server and are applied on the target: the agent sees the
// target's truncated tail, the command that outlives --timeout is killed
// there, and a line runs in the shell named.
func TestRemoteSSHTerminalFlags(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	mark := newMark(t)
	dir := targetDir(t)
	// A shell of the target's that says it ran the line.
	shell := filepath.Join(dir, "loud-sh")
	if err := os.WriteFile(shell, []byte("#!/bin/sh\necho loud-sh ran it\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--approve-all", "--output-limit", "5", "--timeout", "1s", "--shell", shell}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "printf 'héllo wörld'\n"+remoteMarkVar+"="+mark+" sleep 1071", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=remote-term"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout,
		`exit=exit 0 output="örld" truncated=true`,
		`exit=killed by SIGTERM output="n it\n" truncated=true`,
		"  │ loud-sh ran it\n  │ héllo wörld\n  └ exit 0 · ",
		"  └ timed out, killed by SIGTERM · ",
	)
	if left := sshtest.Running(remoteMarkVar, mark); len(left) > 0 {
		t.Errorf("the timed-out command still runs on the target: %v", left)
	}
}

// TestExecServerTerminalFlags: exec-server checks its limits as run does,
// before it serves anything, as a usage error naming the flag.
func TestExecServerTerminalFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-terminals", "0"}, "--max-terminals must be at least 1, not 0"},
		{[]string{"--kill-grace", "-1s"}, "--kill-grace must be positive"},
		{[]string{"--timeout", "-1s"}, "--timeout must not be negative"},
		{[]string{"--output-limit", "0"}, "--output-limit must be positive"},
		{[]string{"--output-limit", "5 parsecs"}, `invalid value "5 parsecs" for flag -output-limit`},
	} {
		r := acpterm(t, opts{plain: true, stdin: ""}, append([]string{"exec-server"}, tc.args...)...)
		if r.code != client.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, client.ExitUsage, tc.want)
		}
	}
}

// TestRemoteSSHCommandFiles: a command on the target has stdin, stdout
// and stderr and nothing else of the exec server's: not the request
// stream, which it could read requests off.
func TestRemoteSSHCommandFiles(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	args := append([]string{"run", "--approve-all", "--sandbox", "off"}, remoteArgs(t, s, targetDir(t))...)
	// ls's own directory of /proc/self/fd is the last.
	args = append(args, "-p", "ls /proc/self/fd | tr '\\n' ' '", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=remote-term"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The output ends with ls's (the shell's start-up files may write
	// before it).
	if !regexp.MustCompile(`(output="|\\n)0 1 2 3 " truncated=false`).MatchString(r.stdout) {
		t.Errorf("the command's files are not 0 1 2 and ls's 3:\n%s", r.stdout)
	}
}
