//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official MCP Go SDK's client drives the real `acpterm mcp` binary
// through its CommandTransport: the peer a host would be.

// mcpSession starts acpterm mcp with args (after --cwd ws) and connects
// the SDK's client to it; the cleanup closes it (stdin EOF) and waits.
func mcpSession(t *testing.T, ws string, copts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	return mcpCommand(t, copts, append([]string{"mcp", "--cwd", ws}, args...)...)
}

// mcpCommand starts acpterm with args, an MCP server, and connects the
// SDK's client to it, as mcpSession does.
func mcpCommand(t *testing.T, copts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	return mcpBinary(t, acptermBin, copts, args...)
}

// mcpBinary is mcpCommand with another build of acpterm.
func mcpBinary(t *testing.T, bin string, copts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &testWriter{t: t}
	client := mcp.NewClient(&mcp.Implementation{Name: "acpterm-test", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to acpterm mcp: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("acpterm mcp ended with %v", cmd.ProcessState)
		}
	})
	return cs
}

// testWriter logs what acpterm mcp writes to stderr.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("acpterm mcp: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (text string, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

var sdkSessionRE = regexp.MustCompile(`Process running with session ID (\d+)`)

func runningSession(t *testing.T, text string) int {
	t.Helper()
	m := sdkSessionRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no session ID in %q", text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func outputOf(text string) string {
	_, out, _ := strings.Cut(text, "\nOutput:\n")
	return out
}

func TestMCPSDKToolsAndCall(t *testing.T) {
	t.Parallel()
	cs := mcpSession(t, t.TempDir(), nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25 (the SDK falls back from its 2026 discovery)", v)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	want := []string{"exec_command", "write_stdin", "list_sessions", "kill_session"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}
	text, isErr := callTool(t, cs, "exec_command", map[string]any{"cmd": "echo hello; pwd"})
	if isErr || !strings.Contains(text, "Process exited with code 0\n") || !strings.HasPrefix(outputOf(text), "hello\n/") {
		t.Errorf("exec_command: isError=%v %q", isErr, text)
	}
}

func TestMCPSDKLongCallPolled(t *testing.T) {
	t.Parallel()
	cs := mcpSession(t, t.TempDir(), nil)
	// The command waits for a file the test makes after the first answer.
	text, _ := callTool(t, cs, "exec_command", map[string]any{
		"cmd":           "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second",
		"yield_time_ms": 300,
	})
	id := runningSession(t, text)
	out := outputOf(text)
	text, _ = callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 250})
	if runningSession(t, text) != id {
		t.Errorf("a poll named another session: %q", text)
	}
	out += outputOf(text)
	list, _ := callTool(t, cs, "list_sessions", nil)
	if !strings.Contains(list, "session "+strconv.Itoa(id)+": running") {
		t.Errorf("list_sessions: %q", list)
	}
	// The sandbox lets the test's own writes through, of course: the
	// workspace is the command's cwd, found from the listing.
	cwd := regexp.MustCompile(` in (\S+): `).FindStringSubmatch(list)
	if cwd == nil {
		t.Fatalf("no cwd in %q", list)
	}
	if err := os.WriteFile(filepath.Join(cwd[1], "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text, _ = callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 30000})
	out += outputOf(text)
	if !strings.Contains(text, "Process exited with code 0") || out != "first\nsecond\n" {
		t.Errorf("last answer %q; all output %q", text, out)
	}
}

func TestMCPSDKInputThroughWriteStdin(t *testing.T) {
	t.Parallel()
	cs := mcpSession(t, t.TempDir(), nil)
	text, _ := callTool(t, cs, "exec_command", map[string]any{"cmd": `read line; echo "got $line"`, "yield_time_ms": 250})
	id := runningSession(t, text)
	text, isErr := callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "chars": "hello there\n", "yield_time_ms": 10000})
	if isErr || !strings.Contains(text, "Process exited with code 0") || outputOf(text) != "got hello there\n" {
		t.Errorf("write_stdin: isError=%v %q", isErr, text)
	}
}

// Cancelling the SDK's call (its ctx) sends notifications/cancelled: the
// command is killed.
func TestMCPSDKCancel(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	progressed := make(chan struct{}, 1)
	cs := mcpSession(t, ws, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	}, "--kill-grace", "500ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{
		"cmd": "echo $$ > pid; echo started; exec sleep 1000", "yield_time_ms": 30000,
	}}
	params.SetProgressToken("p1")
	res := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		res <- err
	}()
	select {
	case <-progressed: // the command has written: its pid is in the file
	case err := <-res:
		t.Fatalf("the call ended before any progress: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(ws, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call: %v", err)
	}
	if err := proctest.WaitExit([]int{pid}, 10*time.Second); err != nil {
		t.Errorf("the cancelled command: %v", err)
	}
	// The session goes on.
	if text, _ := callTool(t, cs, "exec_command", map[string]any{"cmd": "echo after"}); outputOf(text) != "after\n" {
		t.Errorf("a call after the cancel: %q", text)
	}
}

func TestMCPSDKSandboxRefusesOutside(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	cs := mcpSession(t, ws, nil)
	text, _ := callTool(t, cs, "exec_command", map[string]any{"cmd": "echo in > inside && echo out > " + outside + "/f"})
	if strings.Contains(text, "Process exited with code 0") || !regexp.MustCompile(`Read-only file system|Permission denied`).MatchString(outputOf(text)) {
		t.Errorf("a write outside the workspace: %q", text)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file outside: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "inside")); err != nil || string(b) != "in\n" {
		t.Errorf("the file inside: %q, %v", b, err)
	}
	// A workdir outside the roots is refused before anything runs.
	text, isErr := callTool(t, cs, "exec_command", map[string]any{"cmd": "true", "workdir": outside})
	if !isErr || !strings.Contains(text, "outside the workspace") {
		t.Errorf("a workdir outside: isError=%v %q", isErr, text)
	}
}

// When the host goes (stdin ends) every command is killed, with what it
// started, a setsid grandchild included, and acpterm mcp exits 0.
func TestMCPSDKEndOfInputKillsEverything(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	cmd := exec.Command(acptermBin, "mcp", "--cwd", ws, "--kill-grace", "500ms")
	cmd.Stderr = &testWriter{t: t}
	client := mcp.NewClient(&mcp.Implementation{Name: "acpterm-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := callTool(t, cs, "exec_command", map[string]any{
		"cmd": `setsid sh -c 'echo $$ > gpid; exec sleep 1000' & ` +
			`while [ ! -s gpid ]; do sleep 0.01; done; echo $$ > pid; echo ready; exec sleep 1000`,
		"yield_time_ms": 250,
	})
	id := runningSession(t, text)
	for out := outputOf(text); !strings.Contains(out, "ready"); out += outputOf(text) {
		text, _ = callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 1000})
		runningSession(t, text)
	}
	var pids []int
	for _, f := range []string{"pid", "gpid"} {
		b, err := os.ReadFile(filepath.Join(ws, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
	if !cmd.ProcessState.Success() {
		t.Errorf("acpterm mcp ended with %v", cmd.ProcessState)
	}
	if err := proctest.WaitExit(pids, 10*time.Second); err != nil {
		t.Errorf("after the end of input: %v", err)
	}
}

// BenchmarkMCPBinary: one exec_command of `echo hi` a time from the
// official SDK's client to the real acpterm mcp process (workspace-write
// sandbox, stdio pipes), after a first call that starts the sandbox
// helper.
//
//	go test ./cmd/acpterm -run '^$' -bench MCPBinary -benchtime 200x
func BenchmarkMCPBinary(b *testing.B) {
	ws := b.TempDir()
	cmd := exec.Command(acptermBin, "mcp", "--cwd", ws)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "echo hi"}})
		if err != nil || res.IsError || !strings.HasSuffix(res.Content[0].(*mcp.TextContent).Text, "Output:\nhi\n") {
			b.Fatalf("exec_command: %v, %+v", err, res)
		}
	}
	call()
	var times []float64
	for b.Loop() {
		start := time.Now()
		call()
		times = append(times, time.Since(start).Seconds()*1e3)
	}
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2], "median-ms/call")
}
