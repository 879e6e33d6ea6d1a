//go:build unix

package mcpexec_test

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/terminal"
)

// pipeRW is one end of an in-memory connection.
type pipeRW struct {
	io.Reader
	io.Writer
	close func()
}

func (p *pipeRW) Close() error { p.close(); return nil }

// testClient is a raw MCP client on the server's jsonrpc2 engine, for
// what the SDK's client does not let a test do (bad arguments,
// cancellation at a chosen moment, progress).
type testClient struct {
	t     testing.TB
	conn  *jsonrpc2.Conn
	mu    sync.Mutex
	notes []notification
	noted chan struct{}
}

type notification struct {
	Method string
	Params json.RawMessage
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startServer runs a server on an in-memory connection; the cleanup
// closes the client's end (stdin EOF for the server) and waits for Run.
func startServer(t testing.TB, opts *mcpexec.Options) *testClient {
	t.Helper()
	if opts == nil {
		opts = &mcpexec.Options{}
	}
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	srv, err := mcpexec.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), &pipeRW{sr, sw, func() { sr.Close(); sw.Close() }})
	}()
	c := &testClient{t: t, noted: make(chan struct{}, 1)}
	c.conn = jsonrpc2.NewConn(cr, cw, jsonrpc2.HandlerFunc(func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		c.mu.Lock()
		c.notes = append(c.notes, notification{req.Method, append(json.RawMessage(nil), req.Params...)})
		c.mu.Unlock()
		select {
		case c.noted <- struct{}{}:
		default:
		}
		return nil, nil
	}), nil)
	t.Cleanup(func() {
		cw.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		c.conn.Close()
		_ = c.conn.Wait()
	})
	return c
}

func (c *testClient) call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r *toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func (c *testClient) tool(name string, args any) toolResult {
	c.t.Helper()
	var res toolResult
	if err := c.call(ctxFor(c.t), "tools/call", map[string]any{"name": name, "arguments": args}, &res); err != nil {
		c.t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

var sessionRE = regexp.MustCompile(`Process running with session ID (\d+)`)

func sessionOf(t *testing.T, r toolResult) int {
	t.Helper()
	m := sessionRE.FindStringSubmatch(r.text())
	if m == nil {
		t.Fatalf("no session ID in %q", r.text())
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func output(r toolResult) string {
	_, out, _ := strings.Cut(r.text(), "Output:\n")
	return out
}

func TestInitializeNegotiates(t *testing.T) {
	c := startServer(t, &mcpexec.Options{Version: "1.2.3"})
	for _, tc := range []struct{ ask, want string }{
		{"2025-06-18", "2025-06-18"},
		{"2024-11-05", "2024-11-05"},
		{"1999-01-01", mcpexec.ProtocolVersions[0]},
	} {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct{ Name, Version string }
			Capabilities    map[string]json.RawMessage
		}
		err := c.call(ctxFor(t), "initialize", map[string]any{"protocolVersion": tc.ask, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "test", "version": "0"}}, &res)
		if err != nil {
			t.Fatal(err)
		}
		if res.ProtocolVersion != tc.want || res.ServerInfo.Name != "acpterm" || res.ServerInfo.Version != "1.2.3" || res.Capabilities["tools"] == nil {
			t.Errorf("initialize %s: %+v", tc.ask, res)
		}
	}
	var pong map[string]any
	if err := c.call(ctxFor(t), "ping", nil, &pong); err != nil {
		t.Errorf("ping: %v", err)
	}
	err := c.call(ctxFor(t), "resources/list", nil, &pong)
	if e, ok := err.(*jsonrpc2.Error); !ok || e.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("resources/list: %v, want -32601", err)
	}
	err = c.call(ctxFor(t), "tools/call", map[string]any{"name": "rm_rf"}, &pong)
	if e, ok := err.(*jsonrpc2.Error); !ok || e.Code != jsonrpc2.CodeInvalidParams {
		t.Errorf("unknown tool: %v, want -32602", err)
	}
}

func TestExecReturnsOutputAndExit(t *testing.T) {
	c := startServer(t, nil)
	r := c.tool("exec_command", map[string]any{"cmd": "echo hello; echo oops >&2; exit 3"})
	if r.IsError {
		t.Fatalf("error: %s", r.text())
	}
	txt := r.text()
	for _, want := range []string{"Wall time: ", "Process exited with code 3\n", "Output:\nhello\noops\n"} {
		if !strings.Contains(txt, want) {
			t.Errorf("answer %q lacks %q", txt, want)
		}
	}
	if strings.Contains(txt, "session ID") {
		t.Errorf("an ended command got a session: %q", txt)
	}
}

func TestLongCommandPolledAndAnswered(t *testing.T) {
	c := startServer(t, nil)
	r := c.tool("exec_command", map[string]any{"cmd": `echo ready; read line; echo "got $line"`, "yield_time_ms": 300})
	id := sessionOf(t, r)
	if output(r) != "ready\n" {
		t.Errorf("first output %q", output(r))
	}
	// A poll: nothing new, still running.
	r = c.tool("write_stdin", map[string]any{"session_id": id})
	if sessionOf(t, r) != id || output(r) != "" {
		t.Errorf("poll: %q", r.text())
	}
	list := c.tool("list_sessions", map[string]any{})
	if !strings.Contains(list.text(), "session "+strconv.Itoa(id)+": running") {
		t.Errorf("list_sessions: %q", list.text())
	}
	r = c.tool("write_stdin", map[string]any{"session_id": id, "chars": "hi\n", "yield_time_ms": 5000})
	if !strings.Contains(r.text(), "Process exited with code 0") || output(r) != "got hi\n" {
		t.Errorf("answer: %q", r.text())
	}
	// The end was reported: the session is gone.
	r = c.tool("write_stdin", map[string]any{"session_id": id})
	if !r.IsError || !strings.Contains(r.text(), "no session") {
		t.Errorf("write_stdin after the end: %q", r.text())
	}
}

func TestKillSession(t *testing.T) {
	c := startServer(t, &mcpexec.Options{Terminal: &terminal.Options{KillGrace: 200 * time.Millisecond}})
	r := c.tool("exec_command", map[string]any{"cmd": "echo started; sleep 1000", "yield_time_ms": 250})
	id := sessionOf(t, r)
	r = c.tool("kill_session", map[string]any{"session_id": id})
	if r.IsError || !strings.Contains(r.text(), "Process killed by SIGTERM") {
		t.Errorf("kill_session: %q", r.text())
	}
	if l := c.tool("list_sessions", nil); l.text() != "No sessions are running." {
		t.Errorf("list after kill: %q", l.text())
	}
}

func TestBadArgumentsAreToolErrors(t *testing.T) {
	c := startServer(t, nil)
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"exec_command", map[string]any{}, "cmd is required"},
		{"exec_command", map[string]any{"cmd": 3}, "cmd must be a string"},
		{"exec_command", "echo", "must be a JSON object"},
		{"exec_command", map[string]any{"cmd": "true", "yield_time_ms": -1}, "must not be negative"},
		{"exec_command", map[string]any{"cmd": "true", "max_output_tokens": 0}, "must be positive"},
		{"exec_command", map[string]any{"cmd": "true", "workdir": "/nonexistent/dir"}, "does not exist"},
		{"exec_command", map[string]any{"cmd": "a\x00b"}, "NUL"},
		{"write_stdin", map[string]any{}, "session_id is required"},
		{"write_stdin", map[string]any{"session_id": "x"}, "session_id must be a session number"},
		{"write_stdin", map[string]any{"session_id": 4242}, "no session 4242"},
		{"kill_session", map[string]any{"session_id": 7}, "no session 7"},
	} {
		r := c.tool(tc.tool, tc.args)
		if !r.IsError || !strings.Contains(r.text(), tc.want) {
			t.Errorf("%s %v: isError=%v %q, want an error with %q", tc.tool, tc.args, r.IsError, r.text(), tc.want)
		}
	}
}

func TestSessionsBounded(t *testing.T) {
	c := startServer(t, &mcpexec.Options{MaxSessions: 2})
	for range 2 {
		sessionOf(t, c.tool("exec_command", map[string]any{"cmd": "sleep 1000", "yield_time_ms": 250}))
	}
	r := c.tool("exec_command", map[string]any{"cmd": "true"})
	if !r.IsError || !strings.Contains(r.text(), "2 sessions are running") {
		t.Errorf("third session: %q", r.text())
	}
}

func TestOutputClipped(t *testing.T) {
	c := startServer(t, nil)
	r := c.tool("exec_command", map[string]any{"cmd": "seq 1 20000", "max_output_tokens": 100})
	txt := r.text()
	out := output(r)
	if !strings.HasPrefix(out, "1\n2\n") || !strings.HasSuffix(out, "19999\n20000\n") || !strings.Contains(out, "tokens truncated") {
		t.Errorf("clipped output: %q", out)
	}
	if len(out) > 100*4+100 {
		t.Errorf("%d bytes of output for 100 tokens", len(out))
	}
	if !strings.Contains(txt, "Original token count: ") {
		t.Errorf("no original token count: %q", txt)
	}
}

// A server on a host's runtime: its commands are the manager's terminals
// in its session; at its end they are released and the manager lives on.
func TestSharedManager(t *testing.T) {
	dir := t.TempDir()
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir, KillGrace: 200 * time.Millisecond})
	defer m.Close()
	sub, err := m.Subscribe("shared", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	func() {
		c := startServer(t, &mcpexec.Options{Runtime: m, SessionID: "shared", Cwd: dir})
		sessionOf(t, c.tool("exec_command", map[string]any{"cmd": "sleep 1000", "yield_time_ms": 250}))
		if n := len(m.Terminals("shared")); n != 1 {
			t.Errorf("%d terminals in the server's session, want 1", n)
		}
		c.conn.Close() // the client goes: Run ends (see startServer's cleanup)
	}()
	// The host sees the command's whole life through its own subscription.
	var kinds []terminal.EventKind
	for len(kinds) == 0 || kinds[len(kinds)-1] != terminal.EventReleased {
		ev, err := sub.Next(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
	}
	if kinds[0] != terminal.EventCreated {
		t.Errorf("events %v", kinds)
	}
	if _, err := m.Create(ctxFor(t), terminal.Request{SessionID: "other", Command: "true"}); err != nil {
		t.Errorf("the manager after the server: %v", err)
	}
}

// A Ctrl-D in chars closes stdin after what comes before it: cat sees
// the end of its input.
func TestCtrlDClosesStdin(t *testing.T) {
	c := startServer(t, nil)
	id := sessionOf(t, c.tool("exec_command", map[string]any{"cmd": "cat; echo end", "yield_time_ms": 250}))
	r := c.tool("write_stdin", map[string]any{"session_id": id, "chars": "a\nb\n\u0004ignored", "yield_time_ms": 10000})
	txt := r.text()
	if !strings.Contains(txt, "Process exited with code 0") || output(r) != "a\nb\nend\n" ||
		!strings.Contains(txt, "the 7 bytes after it were not written") {
		t.Errorf("answer %q", txt)
	}
}
