package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSDKRemoteSSH: acpterm mcp --remote ssh://… driven by the MCP Go
// SDK's client: exec_command runs on the target, through a real sshd (its
// directory's marker file, ssh's variables), in the sandbox there (a
// write outside its directory is refused), with tty on a pty there;
// write_stdin answers a prompt; and once the client has gone nothing of
// its commands is left there, a setsid grandchild included.
func TestMCPSDKRemoteSSH(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	cs := mcpCommand(t, nil, append([]string{"mcp"}, remoteArgs(t, s, dir)...)...)

	text, isErr := callTool(t, cs, "exec_command", map[string]any{"cmd": "cat marker.txt; echo via ${SSH_CONNECTION%% *}; pwd"})
	if isErr {
		t.Fatalf("exec_command: %s", text)
	}
	mustContain(t, "exec_command's output", outputOf(text), "only on the target\n", "via 127.0.0.1\n", dir+"\n")

	outside := filepath.Join(filepath.Dir(dir), "outside-"+newMark(t))
	text, _ = callTool(t, cs, "exec_command", map[string]any{"cmd": "(echo no > " + outside + ") 2>/dev/null || echo write-refused-$((6*7))"})
	if !strings.Contains(outputOf(text), "write-refused-42") {
		t.Errorf("a write outside the target's directory: %q", text)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("the write outside the sandbox went through: %s exists", outside)
	}

	text, _ = callTool(t, cs, "exec_command", map[string]any{"cmd": "tty; test -t 1 && echo interactive", "tty": true})
	mustContain(t, "tty's output", outputOf(text), "/dev/pts/", "interactive")

	id := runningSession(t, mustText(callTool(t, cs, "exec_command", map[string]any{"cmd": `read line; echo "got $line"`, "yield_time_ms": 250})))
	text, _ = callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "chars": "over ssh\n", "yield_time_ms": 10000})
	if !strings.Contains(text, "Process exited with code 0") || outputOf(text) != "got over ssh\n" {
		t.Errorf("write_stdin: %q", text)
	}

	// Forked before "ready" shows, the three hold the marker (inherited)
	// by then, exec'd or not.
	mark := newMark(t)
	line := remoteMarkVar + "=" + mark + " exec sh -c 'setsid sleep 1111 & sleep 1112 & echo ready; wait'"
	text = mustText(callTool(t, cs, "exec_command", map[string]any{"cmd": line, "yield_time_ms": 1000}))
	id = runningSession(t, text)
	for polls := 0; !strings.Contains(text, "ready"); polls++ {
		if polls == 40 {
			t.Fatalf("no ready: %q", text)
		}
		text += mustText(callTool(t, cs, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 500}))
	}
	if n := len(sshtest.Running(remoteMarkVar, mark)); n < 3 {
		t.Fatalf("%d marked processes there, want 3", n)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
		t.Errorf("left on the target after the MCP client went: %v", left)
	}
}

func mustText(text string, _ bool) string { return text }

// BenchmarkMCPRemoteSSH: an exec_command round trip ("echo hi") through
// acpterm mcp --remote ssh://… (a real sshd on loopback, the exec server
// sandboxed there) beside the same through acpterm mcp here, after each
// one's first call.
func BenchmarkMCPRemoteSSH(b *testing.B) {
	if why := sshtest.Missing(); why != "" {
		b.Skip(why)
	}
	s, err := sshtest.Start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	dir, ws := b.TempDir(), b.TempDir()
	connect := func(args ...string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
			&mcp.CommandTransport{Command: exec.Command(acptermBin, args...)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	there := connect("mcp", "--remote", "ssh://"+sshtest.Host+dir, "--remote-tool-arg=-F"+s.Config, "--remote-binary", plainAcpterm(b))
	defer there.Close()
	here := connect("mcp", "--cwd", ws)
	defer here.Close()
	call := func(cs *mcp.ClientSession) float64 {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "echo hi"}})
		if err != nil || res.IsError || !strings.HasSuffix(res.Content[0].(*mcp.TextContent).Text, "Output:\nhi\n") {
			b.Fatalf("exec_command: %v, %+v", err, res)
		}
		return time.Since(start).Seconds() * 1e3
	}
	call(there)
	call(here)
	var remoteMs, localMs []float64
	for b.Loop() {
		remoteMs = append(remoteMs, call(there))
		localMs = append(localMs, call(here))
	}
	slices.Sort(remoteMs)
	slices.Sort(localMs)
	b.ReportMetric(remoteMs[len(remoteMs)/2], "remote-median-ms/call")
	b.ReportMetric(localMs[len(localMs)/2], "local-median-ms/call")
}
