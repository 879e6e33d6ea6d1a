package mcpexec_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// remoteRuntime is an exec server in this process, on pipes, sandboxed
// to ws, and its client: the Runtime of a server whose commands run
// "there". The cleanup closes the client and waits for the server.
func remoteRuntime(t testing.TB, ws string) *remote.Client {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sopts := &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: ws, KillGrace: 200 * time.Millisecond,
		Policy: &terminal.Policy{Roots: []string{ws},
			Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{ws}, WithoutMountNamespace: true}}}}
	go func() {
		done <- remote.Serve(ctx, &pipeRW{sr, sw, func() { sr.Close(); sw.Close() }}, sopts)
	}()
	c, err := remote.NewClient(ctxFor(t), &pipeRW{cr, cw, func() { cr.Close(); cw.Close() }},
		&remote.ClientOptions{KeepAlive: -1, Where: "test://there"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		<-done
	})
	return c
}

// TestRemoteRuntime: the same tools on a remote.Client: a command runs
// there, in its sandbox; write_stdin answers a prompt on a stdin pipe and
// on a pty; list_sessions and kill_session work; at the end the server's
// commands are released there and the client lives on.
func TestRemoteRuntime(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rc := remoteRuntime(t, ws)
	sub, err := rc.Subscribe(mcpexec.DefaultSessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c := startServer(t, &mcpexec.Options{Runtime: rc, Cwd: ws})

	r := c.tool("exec_command", map[string]any{"cmd": "pwd; echo hi > here.txt; (echo no > ../outside.txt) 2>/dev/null || echo write-refused-$((6*7))"})
	if out := output(r); !strings.HasPrefix(out, ws+"\n") || !strings.Contains(out, "write-refused-42") {
		t.Errorf("answer %q: want the target's cwd and a refused write outside", r.text())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "here.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("here.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "outside.txt")); err == nil {
		t.Error("a write outside the sandbox went through")
	}

	id := sessionOf(t, c.tool("exec_command", map[string]any{"cmd": `read line; echo "got $line"`, "yield_time_ms": 250}))
	list := c.tool("list_sessions", map[string]any{})
	if txt := list.text(); !strings.Contains(txt, "running") || strings.Contains(txt, "pid 0,") {
		t.Errorf("list_sessions: %q", txt)
	}
	r = c.tool("write_stdin", map[string]any{"session_id": id, "chars": "hello\n", "yield_time_ms": 10000})
	if !strings.Contains(r.text(), "Process exited with code 0") || output(r) != "got hello\n" {
		t.Errorf("write_stdin: %q", r.text())
	}

	r = c.tool("exec_command", map[string]any{"tty": true, "yield_time_ms": 1000,
		"cmd": `tty; stty -echo; printf 'Password: '; read pw; stty echo; echo; echo "length ${#pw}"`})
	if !strings.Contains(r.text(), "/dev/pts/") {
		t.Errorf("tty: %q, want a /dev/pts path", r.text())
	}
	id = sessionOf(t, r)
	for seen, polls := r.text(), 0; !strings.Contains(seen, "Password:"); polls++ {
		if polls == 100 {
			t.Fatalf("no prompt after %d polls: %q", polls, seen)
		}
		// Typed before the prompt, the secret could come before echo is off.
		poll := c.tool("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 500})
		seen += poll.text()
	}
	r = c.tool("write_stdin", map[string]any{"session_id": id, "chars": "hunter2\r", "yield_time_ms": 10000})
	all := r.text()
	if !strings.Contains(all, "length 7") || strings.Contains(all, "hunter2") {
		t.Errorf("tty write_stdin: %q", all)
	}

	id = sessionOf(t, c.tool("exec_command", map[string]any{"cmd": "sleep 1000", "yield_time_ms": 250}))
	if r := c.tool("kill_session", map[string]any{"session_id": id}); !strings.Contains(r.text(), "SIGTERM") && !strings.Contains(r.text(), "signal") {
		t.Errorf("kill_session: %q", r.text())
	}
	if txt := c.tool("list_sessions", map[string]any{}); !strings.Contains(txt.text(), "No sessions are running") {
		t.Errorf("list_sessions after all ended: %q", txt.text())
	}
	// Every command the server started there was released there.
	live := map[string]bool{}
	for created := 0; created < 4 || len(live) > 0; {
		ev, err := sub.Next(ctxFor(t))
		if err != nil {
			t.Fatalf("%d created, %v not released: %v", created, live, err)
		}
		switch ev.Kind {
		case terminal.EventCreated:
			created++
			live[string(ev.TerminalID)] = true
		case terminal.EventReleased:
			delete(live, string(ev.TerminalID))
		}
	}
}

// TestPipesOnAPTYRuntime: on a runtime whose terminals default to a pty
// (acpterm run --pty's), exec_command without tty still runs on pipes,
// and with tty on a pty.
func TestPipesOnAPTYRuntime(t *testing.T) {
	dir := t.TempDir()
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir, PTY: &terminal.Size{}})
	defer m.Close()
	c := startServer(t, &mcpexec.Options{Runtime: m, SessionID: "pty-default", Cwd: dir})
	if out := output(c.tool("exec_command", map[string]any{"cmd": "test -t 1 && echo tty || echo pipe"})); out != "pipe\n" {
		t.Errorf("without tty: %q, want pipe", out)
	}
	if out := output(c.tool("exec_command", map[string]any{"cmd": "test -t 1 && echo tty || echo pipe", "tty": true})); out != "tty\n" {
		t.Errorf("with tty: %q, want tty", out)
	}
}

// BenchmarkExecRoundTripRemote: exec_command "echo hi" on a local
// Manager and on a remote.Client to an exec server in this process, on
// pipes, both sandboxed alike: what the protocol adds to a call, with no
// transport's latency (ssh adds its own round trips).
func BenchmarkExecRoundTripRemote(b *testing.B) {
	ws := b.TempDir()
	local := startServer(b, &mcpexec.Options{Cwd: ws, Terminal: &terminal.Options{DefaultCwd: ws, Policy: &terminal.Policy{Roots: []string{ws},
		Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{ws}, WithoutMountNamespace: true}}}})
	there := startServer(b, &mcpexec.Options{Cwd: ws, Runtime: remoteRuntime(b, ws)})
	ctx := ctxFor(b)
	call := func(c *testClient) time.Duration {
		start := time.Now()
		var r toolResult
		if err := c.call(ctx, "tools/call", map[string]any{"name": "exec_command", "arguments": map[string]any{"cmd": "echo hi"}}, &r); err != nil {
			b.Fatal(err)
		}
		if !strings.HasSuffix(r.text(), "Output:\nhi\n") {
			b.Fatalf("answer %q", r.text())
		}
		return time.Since(start)
	}
	call(local) // the sandbox helper's start is not measured
	call(there)
	var localMs, remoteMs []float64
	for b.Loop() {
		localMs = append(localMs, ms(call(local)))
		remoteMs = append(remoteMs, ms(call(there)))
	}
	b.ReportMetric(median(localMs), "local-ms/op")
	b.ReportMetric(median(remoteMs), "remote-ms/op")
}
