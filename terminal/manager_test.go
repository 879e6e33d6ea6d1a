//go:build linux

package terminal

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
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
	if !regexp.MustCompile(`^term_[0-9a-f]{16}$`).MatchString(string(info.TerminalID)) {
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
		{"kill -TERM $$", ExitStatus{Signal: sig("SIGTERM")}},
		{"kill -KILL $$", ExitStatus{Signal: sig("SIGKILL")}},
		{"kill -INT $$", ExitStatus{Signal: sig("SIGINT")}},
		{"kill -HUP $$", ExitStatus{Signal: sig("SIGHUP")}},
		{"ulimit -c 0; kill -SEGV $$", ExitStatus{Signal: sig("SIGSEGV")}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			// A signal ignored here (the suite run under nohup, or as a
			// background job of a shell) stays ignored in the commands,
			// as exec leaves it.
			if s := tt.want.Signal; s != nil && (*s == "SIGHUP" && signal.Ignored(syscall.SIGHUP) || *s == "SIGINT" && signal.Ignored(syscall.SIGINT)) {
				t.Skipf("%s is ignored by this test process, and so by its commands", *s)
			}
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
	if got := env[MarkerEnv]; !strings.HasPrefix(got, string(info.TerminalID)+".") {
		t.Errorf("%s=%q, want the terminal's marker", MarkerEnv, got)
	}
	if _, ok := env["HOME"]; ok {
		t.Error("HOME leaked in although Options.Env replaces the host environment")
	}
	if env["SHLVL"] != "1" {
		t.Errorf("SHLVL=%q with none in the base, want 1: bash -c would be a top-level shell", env["SHLVL"])
	}
}

// TestShellLevel: a command's shell is never a top-level one (SHLVL
// unset or below 1), in which bash reads ~/.bashrc for `bash -c` when
// SSH_CLIENT is set; a higher level and a request's are kept.
func TestShellLevel(t *testing.T) {
	for _, tc := range []struct {
		base, req []string
		want      string
	}{
		{nil, nil, "1"},
		{[]string{"SHLVL=0"}, nil, "1"},
		{[]string{"SHLVL=-3"}, nil, "1"},
		{[]string{"SHLVL=x"}, nil, "1"},
		{[]string{"SHLVL=3"}, nil, "3"},
		{[]string{"SHLVL=3"}, []string{"0"}, "0"},
	} {
		var req []EnvVar
		for _, v := range tc.req {
			req = append(req, EnvVar{"SHLVL", v})
		}
		got, _ := lookupEnv(buildEnv(append([]string{"SSH_CLIENT=127.0.0.1 1 22"}, tc.base...), req), "SHLVL")
		if got != tc.want {
			t.Errorf("base %q, request %q: SHLVL=%q, want %q", tc.base, tc.req, got, tc.want)
		}
	}
	// bash itself, as sshd's environment would start it.
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("echo read-bashrc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, &Options{Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SSH_CLIENT=127.0.0.1 1 22"}})
	out, _ := runTerminal(t, m, Request{Command: "bash", Args: []string{"-c", "echo ran"}})
	if out.Text != "ran\n" {
		t.Errorf("bash -c under an ssh environment printed %q, want only \"ran\" (no ~/.bashrc)", out.Text)
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
		if err := m.SetSessionCwd(context.Background(), "s", "relative"); err == nil {
			t.Error("relative session cwd accepted")
		}
		if err := m.SetSessionCwd(context.Background(), "s", sub); err != nil {
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
