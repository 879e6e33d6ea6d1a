//go:build linux

package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proctest"
)

func TestShellLineVersusArgv(t *testing.T) {
	m := newTestManager(t, nil)
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"shell line", Request{Command: `printf '%s|' 'a b' c`}, "a b|c|"},
		{"shell features", Request{Command: `echo one; echo two | tr a-z A-Z`}, "one\nTWO\n"},
		{"argv, arg with spaces not re-split", Request{Command: "printf", Args: []string{"%s|", "a b", "c"}}, "a b|c|"},
		{"argv, no shell expansion", Request{Command: "echo", Args: []string{"$HOME; echo x"}}, "$HOME; echo x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, st := runTerminal(t, m, tt.req)
			if out.Text != tt.want {
				t.Errorf("output = %q, want %q", out.Text, tt.want)
			}
			wantStatus(t, st, ExitStatus{ExitCode: code(0)})
		})
	}
}

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, &Options{Shell: "/bin/sh", DefaultCwd: dir})
	info := mustCreate(t, m, Request{Command: "echo hi"})
	if !regexp.MustCompile(`^term_[0-9a-f]{16}$`).MatchString(info.TerminalID) {
		t.Errorf("terminal ID %q, want term_ and 16 hex digits", info.TerminalID)
	}
	if want := []string{"/bin/sh", "-c", "echo hi"}; !slices.Equal(info.Argv, want) || !info.Shell {
		t.Errorf("Argv = %q, Shell %v; want %q, true", info.Argv, info.Shell, want)
	}
	if info.Cwd != dir || info.PID <= 0 || info.OutputByteLimit != DefaultOutputCeiling {
		t.Errorf("Cwd %q PID %d limit %d", info.Cwd, info.PID, info.OutputByteLimit)
	}
	mustWait(t, m, info)
	mustRelease(t, m, info)

	info = mustCreate(t, m, Request{Command: "true", Args: []string{"x"}})
	if info.Shell || !filepath.IsAbs(info.Argv[0]) || filepath.Base(info.Argv[0]) != "true" {
		t.Errorf("Argv = %q, Shell %v; want the resolved path of true", info.Argv, info.Shell)
	}
	mustWait(t, m, info)
	mustRelease(t, m, info)
}

func TestExitCodeAndSignalNames(t *testing.T) {
	m := newTestManager(t, nil)
	tests := []struct {
		cmd  string
		want ExitStatus
	}{
		{"exit 0", ExitStatus{ExitCode: code(0)}},
		{"exit 3", ExitStatus{ExitCode: code(3)}},
		{"exit 255", ExitStatus{ExitCode: code(255)}},
		{"kill -TERM $$", ExitStatus{Signal: "SIGTERM"}},
		{"kill -KILL $$", ExitStatus{Signal: "SIGKILL"}},
		{"kill -INT $$", ExitStatus{Signal: "SIGINT"}},
		{"kill -HUP $$", ExitStatus{Signal: "SIGHUP"}},
		{"ulimit -c 0; kill -SEGV $$", ExitStatus{Signal: "SIGSEGV"}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			out, st := runTerminal(t, m, Request{Command: tt.cmd})
			wantStatus(t, st, tt.want)
			if out.ExitStatus == nil || !statusEq(*out.ExitStatus, st) {
				t.Errorf("Output's status %v, Wait's %v", out.ExitStatus, st)
			}
		})
	}
}

func TestStdinIsDevNull(t *testing.T) {
	m := newTestManager(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info := mustCreate(t, m, Request{Command: "cat; read x; echo read=$?"})
	st, err := m.Wait(ctx, info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatalf("cat did not exit at once: %v", err)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	if out := mustOutput(t, m, info); out.Text != "read=1\n" {
		t.Errorf("output %q", out.Text)
	}
	mustRelease(t, m, info)
}

func TestStdoutAndStderrMergedInOrder(t *testing.T) {
	m := newTestManager(t, nil)
	out, _ := runTerminal(t, m, Request{Command: "echo a; echo b >&2; echo c; echo d >&2"})
	if out.Text != "a\nb\nc\nd\n" {
		t.Errorf("output %q", out.Text)
	}
}

func TestEnvDefaultsAndOverrides(t *testing.T) {
	m := newTestManager(t, &Options{Env: []string{
		"PATH=" + os.Getenv("PATH"), "FOO=base", "PAGER=less", "KEEP=yes",
	}})
	info := mustCreate(t, m, Request{Command: "env", Env: []EnvVar{
		{"FOO", "request"}, {"GIT_PAGER", "delta"}, {"EMPTY", ""}, {MarkerEnv, "forged"},
	}})
	mustWait(t, m, info)
	out := mustOutput(t, m, info)
	mustRelease(t, m, info)
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.Text), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	want := map[string]string{
		"FOO":                 "request", // request over base
		"KEEP":                "yes",     // base
		"PAGER":               "cat",     // default over base
		"GIT_PAGER":           "delta",   // request over default
		"GIT_TERMINAL_PROMPT": "0",       // default
		"EMPTY":               "",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s=%q (set %v), want %q", k, got, ok, v)
		}
	}
	if got := env[MarkerEnv]; !strings.HasPrefix(got, info.TerminalID+".") {
		t.Errorf("%s=%q, want the terminal's marker", MarkerEnv, got)
	}
	if _, ok := env["HOME"]; ok {
		t.Error("HOME leaked in although Options.Env replaces the host environment")
	}
}

func TestBadEnv(t *testing.T) {
	m := newTestManager(t, nil)
	for _, v := range []EnvVar{{"", "x"}, {"A=B", "x"}, {"A\x00B", "x"}, {"OK", "a\x00b"}} {
		_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "true", Env: []EnvVar{v}})
		wantCode(t, err, ErrInvalid, acp.CodeInvalidParams)
	}
}

func TestCommandLookup(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "mytool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, &Options{DefaultCwd: dir})

	// The request's PATH is the one searched.
	out, _ := runTerminal(t, m, Request{Command: "mytool", Args: []string{"a"},
		Env: []EnvVar{{"PATH", dir + ":/usr/bin:/bin"}}})
	if out.Text != "tool a\n" {
		t.Errorf("output %q", out.Text)
	}
	// A relative path is relative to the cwd.
	out, _ = runTerminal(t, m, Request{Command: "./mytool", Args: []string{"b"}})
	if out.Text != "tool b\n" {
		t.Errorf("output %q", out.Text)
	}
	// Missing executables fail at create time.
	for _, req := range []Request{
		{Command: "no-such-command-acpterm", Args: []string{"x"}},
		{Command: "/no/such/file", Args: []string{"x"}},
		{Command: "mytool", Args: []string{"x"}}, // not on the host's PATH
		{Command: dir, Args: []string{"x"}},      // a directory
	} {
		req.SessionID = "s"
		_, err := m.Create(testCtx(t), req)
		wantCode(t, err, ErrInvalid, acp.CodeInvalidParams)
		if !strings.Contains(err.Error(), req.Command) {
			t.Errorf("error %q does not name %q", err, req.Command)
		}
	}
	// A missing command in a shell line is the shell's business.
	_, st := runTerminal(t, m, Request{Command: "no-such-command-acpterm"})
	wantStatus(t, st, ExitStatus{ExitCode: code(127)})
}

func TestCwd(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	outside := t.TempDir()
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sub, filepath.Join(root, "inside")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("session default", func(t *testing.T) {
		m := NewManager(nil)
		defer m.Close()
		_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "pwd"})
		wantCode(t, err, ErrInvalid, acp.CodeInvalidParams) // no cwd anywhere
		if err := m.SetSessionCwd("s", "relative"); err == nil {
			t.Error("relative session cwd accepted")
		}
		if err := m.SetSessionCwd("s", sub); err != nil {
			t.Fatal(err)
		}
		out, _ := runTerminal(t, m, Request{SessionID: "s", Command: "pwd"})
		if out.Text != sub+"\n" {
			t.Errorf("pwd = %q, want %q", out.Text, sub)
		}
		out, _ = runTerminal(t, m, Request{SessionID: "s", Command: "pwd", Cwd: root})
		if out.Text != root+"\n" {
			t.Errorf("pwd = %q, want %q", out.Text, root)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		m := newTestManager(t, nil)
		for _, cwd := range []string{"relative/dir", ".", filepath.Join(root, "missing"), file} {
			_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "true", Cwd: cwd})
			wantCode(t, err, ErrInvalid, acp.CodeInvalidParams)
			if !strings.Contains(err.Error(), cwd) {
				t.Errorf("error %q does not name %q", err, cwd)
			}
		}
	})

	t.Run("roots", func(t *testing.T) {
		m := newTestManager(t, &Options{Policy: &Policy{Roots: []string{root}}})
		for _, cwd := range []string{root, sub, filepath.Join(root, "inside")} {
			out, _ := runTerminal(t, m, Request{Command: "pwd -P", Cwd: cwd})
			real, _ := filepath.EvalSymlinks(cwd)
			if out.Text != real+"\n" {
				t.Errorf("cwd %s: pwd = %q, want %q", cwd, out.Text, real)
			}
		}
		for _, cwd := range []string{outside, filepath.Join(root, "escape"), "/"} {
			_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "true", Cwd: cwd})
			wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
		}
	})
}

func TestTailThroughProcesses(t *testing.T) {
	m := newTestManager(t, nil)
	limit := func(n uint64) *uint64 { return &n }
	tests := []struct {
		name      string
		cmd       string
		limit     *uint64
		want      string
		truncated bool
	}{
		{"exactly the limit", `printf 0123456789`, limit(10), "0123456789", false},
		{"one byte over", `printf 0123456789a`, limit(10), "123456789a", true},
		{"multi-byte char straddles the cut", `printf 'a\303\251\342\202\254'`, limit(4), "€", true},
		{"invalid UTF-8", `printf '\377'`, nil, "\uFFFD", false},
		{"invalid UTF-8, maximal subparts", `printf 'a\342\202b\355\240\200'`, nil, "a\uFFFDb\uFFFD\uFFFD\uFFFD", false},
		{"limit 0 with output", `echo hello`, limit(0), "", true},
		{"limit 0 without output", `true`, limit(0), "", false},
		{"large output keeps the tail", `seq 1 100000`, limit(7), "\n100000\n"[1:], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := runTerminal(t, m, Request{Command: tt.cmd, OutputByteLimit: tt.limit})
			if out.Text != tt.want || out.Truncated != tt.truncated {
				t.Errorf("got (%q, truncated %v), want (%q, %v)", out.Text, out.Truncated, tt.want, tt.truncated)
			}
		})
	}
}

func TestOutputCeiling(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{OutputCeiling: 100}})
	for _, tt := range []struct {
		limit *uint64
		want  int
	}{{nil, 100}, {ptr(uint64(50)), 50}, {ptr(uint64(1000)), 100}} {
		info := mustCreate(t, m, Request{Command: "head -c 1000 /dev/zero | tr '\\0' x", OutputByteLimit: tt.limit})
		mustWait(t, m, info)
		out := mustOutput(t, m, info)
		mustRelease(t, m, info)
		if len(out.Text) != tt.want || !out.Truncated || info.OutputByteLimit != uint64(tt.want) {
			t.Errorf("limit %v: %d bytes (truncated %v, effective limit %d), want %d",
				tt.limit, len(out.Text), out.Truncated, info.OutputByteLimit, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestOutputWhileRunning(t *testing.T) {
	m := newTestManager(t, nil)
	sub, err := m.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "echo ready; exec sleep 30"})
	// Wait for the output to arrive (via events, not sleeping).
	for got := ""; got != "ready\n"; {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		got += string(ev.Data)
	}
	out := mustOutput(t, m, info)
	if out.Text != "ready\n" || out.ExitStatus != nil {
		t.Errorf("output %q, status %v; want running with ready", out.Text, out.ExitStatus)
	}
	mustRelease(t, m, info)
}

func TestBackgroundChildDoesNotDelayWait(t *testing.T) {
	m := newTestManager(t, nil)
	start := time.Now()
	info := mustCreate(t, m, Request{Command: "sleep 30 & echo $!; echo started"})
	st := mustWait(t, m, info)
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("wait took %v although the shell exited at once", d)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	pid, text, _ := strings.Cut(out.Text, "\n")
	if text != "started\n" {
		t.Fatalf("output %q", out.Text)
	}
	pids := parsePIDs(t, pid)
	if !alive(pids[0]) {
		t.Fatal("background sleep died before release")
	}
	mustRelease(t, m, info)
	waitDead(t, pids[0])
}

// The drain ends when the pipe is empty, not at DrainTimeout: with a
// 30 s window, a background sleep holding the pipe must not delay the
// status, and what the shell and the pipeline it waited for wrote (more
// than a pipe buffer) must all be there.
func TestDrainEndsWhenPipeEmpty(t *testing.T) {
	const window = 30 * time.Second
	m := newTestManager(t, &Options{DrainTimeout: window})
	const n = 200000
	info := mustCreate(t, m, Request{Command: fmt.Sprintf(
		`sleep 30 & echo $!; head -c %d /dev/zero | tr '\0' a; echo; echo end`, n)})
	// Half the window: a wait that waited for the window, or for the
	// sleep, fails here instead of passing late.
	ctx, cancel := context.WithTimeout(context.Background(), window/2)
	defer cancel()
	st, err := m.Wait(ctx, info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatalf("Wait with a %v drain window: %v (it waited for the background sleep)", window, err)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	pidLine, rest, _ := strings.Cut(out.Text, "\n")
	if want := strings.Repeat("a", n) + "\nend\n"; rest != want {
		t.Errorf("output after the pid: %d bytes ending %q, want %d ending %q",
			len(rest), rest[max(0, len(rest)-8):], len(want), want[len(want)-8:])
	}
	pid := parsePIDs(t, pidLine)[0]
	mustRelease(t, m, info)
	waitDead(t, pid)
}

// A descendant that never stops writing must not keep the reader, and so
// the status, waiting: reading stops at the drain deadline even though
// the pipe may never run dry. The background job writes more than the
// limit before the shell may exit (the file "started" says so), so that
// output is in the pipe and must be captured; what yes writes afterwards
// need not be.
func TestWritingDescendantDoesNotDelayWait(t *testing.T) {
	m := newTestManager(t, nil)
	dir := t.TempDir()
	limit := uint64(4096)
	info := mustCreate(t, m, Request{
		Command: "{ yes spam | head -c 8192; touch started; exec yes spam; } & echo $! > pid; " +
			"while [ ! -e started ]; do :; done; echo started",
		Cwd:             dir,
		OutputByteLimit: &limit,
	})
	start := time.Now()
	st := mustWait(t, m, info)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait took %v with a %v drain timeout", d, DefaultDrainTimeout)
	}
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	if !out.Truncated || !strings.Contains(out.Text, "spam\nspam\n") {
		t.Fatalf("output truncated=%v ending %q", out.Truncated, out.Text[max(0, len(out.Text)-20):])
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := parsePIDs(t, strings.TrimSpace(string(b)))[0]
	if !alive(pid) {
		t.Fatal("background yes died before release")
	}
	mustRelease(t, m, info)
	waitDead(t, pid)
}

// daemonCmd double-forks a sleep into a new session (out of the process
// group) and prints its PID; the sleep keeps the output pipe open.
const daemonCmd = `setsid sh -c 'sleep 300 & echo $!' & wait; echo done`

func TestNoDescendantSurvivesRelease(t *testing.T) {
	for _, iso := range []Isolation{IsolationAuto, IsolationProcScan} {
		t.Run(iso.String(), func(t *testing.T) {
			m := newTestManager(t, &Options{Isolation: iso})
			if iso == IsolationAuto {
				if m.Isolation() != IsolationCgroup {
					t.Skipf("no writable cgroup v2 here (isolation %s)", m.Isolation())
				}
			} else if m.Isolation() != iso {
				t.Fatalf("isolation %s, want %s", m.Isolation(), iso)
			}
			info := mustCreate(t, m, Request{Command: daemonCmd})
			mustWait(t, m, info)
			out := mustOutput(t, m, info)
			pidStr, rest, _ := strings.Cut(out.Text, "\n")
			if rest != "done\n" {
				t.Fatalf("output %q", out.Text)
			}
			pid := parsePIDs(t, pidStr)[0]
			if !alive(pid) {
				t.Fatal("daemon died before release")
			}
			if sid := sessionOf(t, pid); sid == info.PID {
				t.Fatalf("daemon still in the terminal's session %d", sid)
			}
			mustRelease(t, m, info)
			waitDead(t, pid)
		})
	}
}

// sessionOf reads the session ID of pid from /proc.
func sessionOf(t *testing.T, pid int) int {
	st, ok := proctest.ReadStat(pid)
	if !ok {
		t.Fatalf("no process %d", pid)
	}
	return st.Session
}

func TestKillThenOutputWaitRelease(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "echo before; sleep 30; echo after"})
	// Subscribing to the terminal replays what it wrote so far.
	sub, err := m.Subscribe(info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	nextOutput(t, sub)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	out := mustOutput(t, m, info)
	want := ExitStatus{Signal: "SIGTERM"}
	if out.ExitStatus == nil {
		t.Fatal("no exit status after kill")
	}
	wantStatus(t, *out.ExitStatus, want)
	if out.Text != "before\n" {
		t.Errorf("output %q", out.Text)
	}
	wantStatus(t, mustWait(t, m, info), want)
	// Kill again, on an exited command: a no-op.
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), want)
	mustRelease(t, m, info)
	_, err = m.Output(testCtx(t), info.SessionID, info.TerminalID)
	wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	m := newTestManager(t, &Options{KillGrace: 100 * time.Millisecond})
	sub, _ := m.Subscribe("", "")
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "trap '' TERM; echo trapped; sleep 30"})
	nextOutput(t, sub)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{Signal: "SIGKILL"})
	mustRelease(t, m, info)
}

func TestKillExitedIsNoop(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "exit 4"})
	mustWait(t, m, info)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(4)})
	mustRelease(t, m, info)
}

func TestConcurrentWaiters(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	const n = 20
	results := make(chan ExitStatus, n)
	var waiting sync.WaitGroup
	m.waiting = waiting.Done
	for range n {
		waiting.Add(1)
		go func() {
			st, err := m.Wait(testCtx(t), info.SessionID, info.TerminalID)
			if err != nil {
				t.Error(err)
			}
			results <- st
		}()
	}
	waiting.Wait() // every Wait is blocked
	m.waiting = nil
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	for range n {
		wantStatus(t, <-results, ExitStatus{Signal: "SIGTERM"})
	}
	mustRelease(t, m, info)
}

func TestCancelledWaitLeavesProcessRunning(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Wait(ctx, info.SessionID, info.TerminalID)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if !alive(info.PID) {
		t.Fatal("cancelled wait killed the command")
	}
	if out := mustOutput(t, m, info); out.ExitStatus != nil {
		t.Fatalf("status %v after a cancelled wait", out.ExitStatus)
	}
	mustRelease(t, m, info)
}

func TestReleaseResolvesPendingWaits(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	results := make(chan ExitStatus, 3)
	var waiting sync.WaitGroup
	m.waiting = waiting.Done
	for range 3 {
		waiting.Add(1)
		go func() {
			st, err := m.Wait(testCtx(t), info.SessionID, info.TerminalID)
			if err != nil {
				t.Error(err)
			}
			results <- st
		}()
	}
	waiting.Wait() // every Wait is blocked
	m.waiting = nil
	mustRelease(t, m, info)
	for range 3 {
		wantStatus(t, <-results, ExitStatus{Signal: "SIGTERM"})
	}
}

func TestUnknownReleasedAndForeignTerminals(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	ctx := testCtx(t)
	calls := map[string]func(sid, tid string) error{
		"output":  func(sid, tid string) error { _, err := m.Output(ctx, sid, tid); return err },
		"wait":    func(sid, tid string) error { _, err := m.Wait(ctx, sid, tid); return err },
		"kill":    func(sid, tid string) error { return m.Kill(ctx, sid, tid) },
		"release": func(sid, tid string) error { return m.Release(ctx, sid, tid) },
	}
	for name, call := range calls {
		unknown := call("nobody", info.TerminalID)
		foreign := call("s2", info.TerminalID)
		wantCode(t, unknown, ErrNotFound, acp.CodeInvalidParams)
		wantCode(t, foreign, ErrNotFound, acp.CodeInvalidParams)
		if unknown.Error() != foreign.Error() || !strings.Contains(foreign.Error(), info.TerminalID) {
			t.Errorf("%s: unknown %q vs foreign %q: want the same message naming the terminal", name, unknown, foreign)
		}
	}
	if out := mustOutput(t, m, info); out.ExitStatus != nil {
		t.Fatal("another session's calls touched the terminal")
	}
	mustRelease(t, m, info)
	for name, call := range calls {
		err := call(info.SessionID, info.TerminalID)
		wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
		if want := call("nobody", info.TerminalID).Error(); err.Error() != want {
			t.Errorf("%s after release: %q, want %q", name, err, want)
		}
	}
}

func TestReleaseTwice(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "true"})
	mustRelease(t, m, info)
	err := m.Release(testCtx(t), info.SessionID, info.TerminalID)
	wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
}

func TestPerSessionLimit(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{MaxTerminalsPerSession: 2}})
	a := mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	mustCreate(t, m, Request{SessionID: "s1", Command: "sleep 30"})
	_, err := m.Create(testCtx(t), Request{SessionID: "s1", Command: "true"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !strings.Contains(err.Error(), "limit") {
		t.Errorf("error %q does not say it is the limit", err)
	}
	mustCreate(t, m, Request{SessionID: "s2", Command: "true"}) // other sessions unaffected
	// Exited but unreleased terminals still count.
	mustRelease(t, m, a)
	mustCreate(t, m, Request{SessionID: "s1", Command: "true"})
}

func TestTimeout(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{Timeout: 100 * time.Millisecond}})
	sub, _ := m.Subscribe("", "")
	defer sub.Close()
	info := mustCreate(t, m, Request{Command: "sleep 30"})
	want := ExitStatus{Signal: "SIGTERM", TimedOut: true}
	wantStatus(t, mustWait(t, m, info), want)
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventExited {
			wantStatus(t, *ev.Status, want)
			break
		}
	}
	// A command that finishes in time is not marked.
	_, st := runTerminal(t, m, Request{Command: "true"})
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	mustRelease(t, m, info)
}

func TestDecide(t *testing.T) {
	var seen []Info
	var mu sync.Mutex
	blocked := make(chan struct{})
	m := newTestManager(t, &Options{Policy: &Policy{
		Decide: func(ctx context.Context, info Info) Decision {
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
			switch {
			case strings.HasPrefix(info.Command, "rm"):
				return Deny("rm is not allowed here")
			case info.Command == "block":
				close(blocked)
				<-ctx.Done() // like a permission prompt the agent cancels
			}
			return Allow()
		},
		MaxTerminalsPerSession: 1,
	}})
	_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "rm -rf x"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !strings.Contains(err.Error(), "rm is not allowed here") {
		t.Errorf("error %q lacks the reason", err)
	}
	// A cancelled create (the agent's $/cancel_request) starts nothing.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Create(ctx, Request{SessionID: "s", Command: "block"})
		errc <- err
	}()
	<-blocked
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled create: %v", err)
	}
	// Neither left a slot taken (the limit is 1).
	info := mustCreate(t, m, Request{SessionID: "s", Command: "echo", Args: []string{"ok"}})
	mustRelease(t, m, info)
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.Cwd == "" || !filepath.IsAbs(last.Argv[0]) || last.TerminalID != "" {
		t.Errorf("Decide saw %+v; want resolved cwd and argv, no ID yet", last)
	}
}

func TestManyConcurrentTerminals(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 50
	}
	m := newTestManager(t, &Options{Policy: &Policy{MaxTerminalsPerSession: n}})
	infos := make([]Info, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "echo", Args: []string{fmt.Sprint(i)}})
			if err != nil {
				t.Error(err)
				return
			}
			infos[i] = info
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if got := len(m.Terminals("s")); got != n {
		t.Errorf("%d live terminals, want %d", got, n)
	}
	ids := map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := infos[i]
			st := mustWait(t, m, info)
			out := mustOutput(t, m, info)
			if out.Text != fmt.Sprintln(i) || !statusEq(st, ExitStatus{ExitCode: code(0)}) {
				t.Errorf("terminal %d: %q, %v", i, out.Text, st)
			}
			mustRelease(t, m, info)
		}()
		ids[infos[i].TerminalID] = true
	}
	wg.Wait()
	if len(ids) != n {
		t.Errorf("%d distinct IDs for %d terminals", len(ids), n)
	}
	if got := len(m.Terminals("s")); got != 0 {
		t.Errorf("%d terminals left", got)
	}
}

func TestReleaseSession(t *testing.T) {
	m := newTestManager(t, nil)
	a := mustCreate(t, m, Request{SessionID: "a", Command: "sleep 30"})
	a2 := mustCreate(t, m, Request{SessionID: "a", Command: "true"})
	b := mustCreate(t, m, Request{SessionID: "b", Command: "sleep 30"})
	m.ReleaseSession("a")
	waitDead(t, a.PID)
	for _, info := range []Info{a, a2} {
		_, err := m.Output(testCtx(t), info.SessionID, info.TerminalID)
		wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
	}
	if !alive(b.PID) {
		t.Fatal("another session's terminal was killed")
	}
	mustRelease(t, m, b)
}

func TestCloseKillsEverything(t *testing.T) {
	m := NewManager(&Options{DefaultCwd: t.TempDir()})
	sub, err := m.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, sid := range []string{"a", "b"} {
		for range 3 {
			pids = append(pids, mustCreate(t, m, Request{SessionID: sid, Command: "sleep 30"}).PID)
		}
	}
	d := mustCreate(t, m, Request{SessionID: "a", Command: daemonCmd})
	// The daemon's PID is the first line; wait for it through events.
	var daemonOut string
	for !strings.Contains(daemonOut, "\n") {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.TerminalID == d.TerminalID {
			daemonOut += string(ev.Data)
		}
	}
	pids = append(pids, parsePIDs(t, strings.SplitN(daemonOut, "\n", 2)[0])...)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		waitDead(t, pid)
	}
	_, err = m.Create(testCtx(t), Request{SessionID: "a", Command: "true"})
	wantCode(t, err, ErrClosed, acp.CodeInternalError)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The subscription saw every release, then ends.
	released := 0
	for {
		ev, err := sub.Next(testCtx(t))
		if errors.Is(err, ErrSubscriptionClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventReleased {
			released++
		}
	}
	if released != 7 {
		t.Errorf("%d Released events, want 7", released)
	}
}

func TestDefaultShell(t *testing.T) {
	for _, tt := range []struct{ shell, want string }{
		{"/bin/bash", "/bin/bash"},
		{"/bin/dash", "/bin/dash"},
		{"/usr/bin/fish", "/bin/sh"},
		{"/bin/csh", "/bin/sh"},
		{"bash", "/bin/sh"},          // not absolute
		{"/no/such/bash", "/bin/sh"}, // not there
		{"", "/bin/sh"},
	} {
		t.Setenv("SHELL", tt.shell)
		if got := DefaultShell(); got != tt.want {
			t.Errorf("SHELL=%q: DefaultShell() = %q, want %q", tt.shell, got, tt.want)
		}
	}
	if got := shellArgv("/bin/busybox"); !slices.Equal(got, []string{"/bin/busybox", "sh"}) {
		t.Errorf("busybox argv %q", got)
	}
}

func TestCgroupPlacement(t *testing.T) {
	m := newTestManager(t, nil)
	if m.Isolation() != IsolationCgroup {
		t.Skipf("isolation %s", m.Isolation())
	}
	out, _ := runTerminal(t, m, Request{Command: "cat", Args: []string{"/proc/self/cgroup"}})
	if !strings.Contains(out.Text, "0::") {
		t.Fatalf("no cgroup v2 line in %q", out.Text)
	}
	var line string
	for _, l := range strings.Split(out.Text, "\n") {
		if strings.HasPrefix(l, "0::") {
			line = l
		}
	}
	if !regexp.MustCompile(`/acpterm-\d+-\d+-terms-[0-9a-f]{8}/term_[0-9a-f]{16}$`).MatchString(line) {
		t.Errorf("command ran in cgroup %q, want the terminal's own", line)
	}
}

func TestIsolationGroupKeepsBackgroundJobsUntilRelease(t *testing.T) {
	m := newTestManager(t, &Options{Isolation: IsolationGroup})
	if m.Isolation() != IsolationGroup {
		t.Fatalf("isolation %s", m.Isolation())
	}
	info := mustCreate(t, m, Request{Command: "sleep 30 >/dev/null & echo $!"})
	mustWait(t, m, info)
	pid := parsePIDs(t, mustOutput(t, m, info).Text)[0]
	if !alive(pid) {
		t.Fatal("background job died with its shell")
	}
	mustRelease(t, m, info)
	waitDead(t, pid)
}

func TestCloseWhileBusy(t *testing.T) {
	m := NewManager(&Options{DefaultCwd: t.TempDir(), KillGrace: 100 * time.Millisecond})
	var (
		mu   sync.Mutex
		pids []int
		wg   sync.WaitGroup
	)
	created := make(chan struct{}, 100)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprint("s", g%2)
			for {
				info, err := m.Create(testCtx(t), Request{SessionID: sid, Command: "sleep 30"})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pids = append(pids, info.PID)
				mu.Unlock()
				select {
				case created <- struct{}{}:
				default:
				}
				if err := m.Release(testCtx(t), sid, info.TerminalID); err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
				}
			}
		}()
	}
	for range 10 {
		<-created
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, pid := range pids {
		waitDead(t, pid)
	}
	if dir := m.iso.dir; dir != "" {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("manager cgroup %s left behind: %v", dir, err)
		}
	}
}

func TestStaleCgroupsOfDeadHostsAreCleaned(t *testing.T) {
	parent, err := ownCgroupDir()
	if err != nil {
		t.Skip(err)
	}
	probe := NewManager(nil)
	usable := probe.Isolation() == IsolationCgroup
	probe.Close()
	if !usable {
		t.Skip("no writable cgroup v2")
	}
	// A host that died: its PID is gone, its cgroup holds a live process.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("acpterm-%d-deadbeef", dead.Process.Pid))
	termDir := filepath.Join(stale, "term_0000000000000000")
	if err := os.MkdirAll(termDir, 0o755); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "30")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Wait()
	if err := os.WriteFile(filepath.Join(termDir, "cgroup.procs"), []byte(fmt.Sprint(orphan.Process.Pid)), 0); err != nil {
		orphan.Process.Kill()
		t.Fatal(err)
	}
	m := NewManager(nil)
	defer m.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s still there: %v", stale, err)
	}
	waitDead(t, orphan.Process.Pid)
}
