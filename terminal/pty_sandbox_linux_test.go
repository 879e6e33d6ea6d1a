//go:build linux

package terminal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// sandboxedPTYManager is a manager whose commands run in the workspace
// sandbox, skipping the test where the kernel cannot give the command a
// devpts of its own.
func sandboxedPTYManager(t *testing.T) (*Manager, string) {
	t.Helper()
	ws := t.TempDir()
	m := newTestManager(t, &Options{DefaultCwd: ws, Policy: &Policy{Roots: []string{ws}, Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite}}})
	info := mustCreate(t, m, Request{Command: "true"})
	mustWait(t, m, info)
	if info.Sandbox == nil || !info.Sandbox.PrivatePTS {
		t.Skipf("no private devpts for sandboxed commands here (%+v)", info.Sandbox)
	}
	return m, ws
}

func TestSandboxedPTY(t *testing.T) {
	t.Parallel()
	m, _ := sandboxedPTYManager(t)
	info := mustCreate(t, m, Request{
		Command: `tty; test -t 0 && test -t 1 && echo terminal; echo own > /dev/tty && echo tty ok; stty size; ls /dev/pts; echo x > ` + t.TempDir() + `/f || echo write refused`,
		PTY:     &Size{Cols: 90, Rows: 20},
	})
	if info.Sandbox == nil || !info.Sandbox.PrivatePTS {
		t.Fatalf("Info.Sandbox = %+v, want a private devpts", info.Sandbox)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info).Text
	// The command's pty is the only one in its devpts: /dev/pts/0.
	want := regexp.MustCompile(`^/dev/pts/0\nterminal\nown\ntty ok\n20 90\n0\s+ptmx\n[^\n]*: Read-only file system\nwrite refused\n$`)
	if !want.MatchString(out) {
		t.Errorf("output %q, want a match of %s", out, want)
	}
}

func TestSandboxedPTYSecretPrompt(t *testing.T) {
	t.Parallel()
	m, _ := sandboxedPTYManager(t)
	info := mustCreate(t, m, Request{Command: "bash", Args: []string{"-c", `read -s -p 'Password: ' pw < /dev/tty; echo; echo "got ${#pw} characters"`}, PTY: defaultPTY})
	waitFor(t, m, info, "Password: ")
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("hunter2\r")); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	if out := mustOutput(t, m, info).Text; out != "Password:\ngot 7 characters\n" || strings.Contains(out, "hunter2") {
		t.Errorf("output %q", out)
	}
}

// TestSandboxedPipeHasNoTTY: a pipe-mode command in the same sandbox (one
// helper for the session) cannot open /dev/tty: the helper has no
// controlling terminal, so there is none to reach, the user's least of all.
func TestSandboxedPipeHasNoTTY(t *testing.T) {
	t.Parallel()
	m, _ := sandboxedPTYManager(t)
	out, st := runTerminal(t, m, Request{Command: `echo x > /dev/tty; ps -o tty= -p $$`})
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	if !strings.Contains(out.Text, "No such device or address") {
		t.Errorf("output %q, want ENXIO from /dev/tty", out.Text)
	}
}

// ttyHelperEnv makes TestMain run ttyHelper: the test binary started on a
// pty of the test's, as acpterm runs on the user's terminal.
const ttyHelperEnv = "TERMINAL_TEST_TTY_HELPER"

// TestSandboxedPipeCannotReachTheUsersTerminal: acpterm runs on the
// user's terminal (here a pty the test holds, the helper's controlling
// terminal). A pipe-mode command outside the sandbox can write to it
// through /dev/tty (the control: the test can tell); a sandboxed one gets
// ENXIO, since its sandbox helper has no controlling terminal.
func TestSandboxedPipeCannotReachTheUsersTerminal(t *testing.T) {
	t.Parallel()
	sandboxedPTYManager(t) // skips where there is no private devpts
	master, tty, err := hostPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	result := filepath.Join(t.TempDir(), "result")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ttyHelperEnv+"="+result)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen strings.Builder
	copyPTY(master, func(p []byte) { screen.Write(p) }) // until the helper has exited (EIO)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, screen.String())
	}
	res, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(screen.String(), "REACHED-unsandboxed") {
		t.Errorf("the unsandboxed command did not reach the terminal (the control); it saw %q, the terminal %q", res, screen.String())
	}
	if strings.Contains(screen.String(), "REACHED-sandboxed") {
		t.Errorf("the sandboxed command wrote to the user's terminal: %q", screen.String())
	}
	if !strings.Contains(string(res), "sandboxed: ") || !strings.Contains(string(res), "No such device or address") {
		t.Errorf("the sandboxed command saw %q, want ENXIO from /dev/tty", res)
	}
}

// ttyHelper runs a pipe-mode command that writes to /dev/tty, unsandboxed
// and then sandboxed, and writes what their output said to the file
// named by ttyHelperEnv.
func ttyHelper(result string) int {
	ws, err := os.MkdirTemp("", "acpterm-tty")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(ws)
	ctx := context.Background()
	var out strings.Builder
	for _, name := range []string{"unsandboxed", "sandboxed"} {
		opts := &Options{DefaultCwd: ws}
		if name == "sandboxed" {
			opts.Policy = &Policy{Roots: []string{ws}, Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite}}
		}
		m := NewManager(opts)
		info, err := m.Create(ctx, Request{SessionID: "s", Command: "echo REACHED-" + name + " > /dev/tty"})
		if err == nil {
			_, err = m.Wait(ctx, "s", info.TerminalID)
		}
		var o Output
		if err == nil {
			o, err = m.Output(ctx, "s", info.TerminalID)
		}
		m.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(&out, "%s: %s\n", name, o.Text)
	}
	if err := os.WriteFile(result, []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
