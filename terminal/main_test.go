//go:build linux

package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// First: the sandboxed tests and benchmarks re-execute the test binary
	// as the sandbox helper.
	sandbox.Init()
	if os.Getenv(bareExecEnv) != "" {
		os.Exit(0) // a bare re-exec of the binary, for the benchmarks
	}
	if os.Getenv(noLandlockEnv) != "" {
		if err := hideLandlock(); err != nil {
			fmt.Fprintf(os.Stderr, "hiding Landlock: %v\n", err)
			os.Exit(1)
		}
	}
	// The peak-RSS benchmark re-executes the test binary as a capture
	// helper (see rss_test.go).
	if n := os.Getenv(rssHelperEnv); n != "" {
		os.Exit(rssHelper(n))
	}
	// The test that a sandboxed command cannot reach the user's terminal
	// re-executes the test binary on a pty (see pty_sandbox_linux_test.go).
	if f := os.Getenv(ttyHelperEnv); f != "" {
		os.Exit(ttyHelper(f))
	}
	// The /proc scan's test of a process seen mid-execve re-executes the
	// test binary as that process (see procscan_linux_test.go).
	if os.Getenv(hideEnvironEnv) != "" {
		os.Exit(hideEnvironHelper())
	}
	// Under -race a binary sleeps a second before it exits; the tests
	// re-execute this one (helpers, sandboxed commands) hundreds of times.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}

// testCtx bounds a test's blocking calls so that a bug fails the test
// instead of hanging the run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newTestManager(t testing.TB, opts *Options) *Manager {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.DefaultCwd == "" {
		opts.DefaultCwd = t.TempDir()
	}
	m := NewManager(opts)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func mustCreate(t testing.TB, m *Manager, req Request) Info {
	t.Helper()
	if req.SessionID == "" {
		req.SessionID = "sess_test"
	}
	info, err := m.Create(testCtx(t), req)
	if err != nil {
		t.Fatalf("Create(%q %q): %v", req.Command, req.Args, err)
	}
	return info
}

func mustWait(t testing.TB, m *Manager, info Info) ExitStatus {
	t.Helper()
	st, err := m.Wait(testCtx(t), info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return st
}

func mustOutput(t testing.TB, m *Manager, info Info) Output {
	t.Helper()
	out, err := m.Output(testCtx(t), info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatalf("Output: %v", err)
	}
	return out
}

func mustRelease(t testing.TB, m *Manager, info Info) {
	t.Helper()
	if err := m.Release(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// runTerminal does create, wait, output, release.
func runTerminal(t testing.TB, m *Manager, req Request) (Output, ExitStatus) {
	t.Helper()
	info := mustCreate(t, m, req)
	st := mustWait(t, m, info)
	out := mustOutput(t, m, info)
	mustRelease(t, m, info)
	return out, st
}

func code(n uint32) *uint32 { return &n }

func sig(name string) *string { return &name }

func statusEq(a, b ExitStatus) bool {
	return ptrEq(a.Signal, b.Signal) && ptrEq(a.ExitCode, b.ExitCode)
}

func ptrEq[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func wantStatus(t testing.TB, got, want ExitStatus) {
	t.Helper()
	if !statusEq(got, want) {
		t.Errorf("exit status = %v, want %v", got, want)
	}
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool { return proctest.Alive(pid) }

// waitDead waits (bounded) until pid has exited.
func waitDead(t testing.TB, pid int) {
	t.Helper()
	if err := proctest.WaitExit([]int{pid}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// parsePIDs reads the whitespace-separated PIDs a command printed.
func parsePIDs(t testing.TB, s string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(s) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("not a pid: %q in %q", f, s)
		}
		pids = append(pids, pid)
	}
	return pids
}

// CodeInvalidParams is acp.CodeInvalidParams for the tests that name it
// alone.
const CodeInvalidParams = acp.CodeInvalidParams

// wantCode checks that err is of the given kind and that the acp methods
// send it with code.
func wantCode(t testing.TB, err error, kind error, code int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v (%d)", kind, code)
	}
	if got := acp.ErrorCode(wireErr(err)); !errors.Is(err, kind) || got != code {
		t.Fatalf("error %q (code %d), want %v (%d)", err, got, kind, code)
	}
}

// nextOutput skips events until an output event arrives.
func nextOutput(t testing.TB, sub Events) Event {
	t.Helper()
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatalf("waiting for output: %v", err)
		}
		if ev.Kind == EventOutput {
			return ev
		}
	}
}
