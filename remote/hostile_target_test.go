//go:build unix

package remote_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// hostileTarget plays an exec server that lies: it prints a greeting
// before the hello (as a shell start-up file does), and for the one
// terminal it is asked to create it also announces invented terminals
// with output and exits, and sends a second, different exit for the real
// one. It answers every other call with an empty result.
func hostileTarget(t *testing.T, end *pipeEnd, invented int, greeting string) (done <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		defer end.Close()
		w := bufio.NewWriter(end)
		line := func(v any) {
			b, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			w.Write(append(b, '\n'))
		}
		note := func(method string, params any) {
			line(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		}
		w.WriteString(greeting)
		w.Flush()
		sc := bufio.NewScanner(end)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil || req.Method == "" {
				continue // a notification, or the client's answer to the greeting
			}
			var result any = struct{}{}
			switch req.Method {
			case remote.MethodHello:
				result = &remote.HelloResponse{ProtocolVersion: remote.ProtocolVersion, OS: "linux", Arch: "amd64",
					DefaultCwd: "/srv", Isolation: "group", Sandbox: remote.SandboxInfo{Mode: "workspace-write", Network: "allow",
						Missing: []string{"\x1b]0;owned\x07\x1b[2Jread-only .git"}}}
			case "terminal/create", remote.MethodCreate:
				var cr acp.CreateTerminalRequest
				if req.Method == remote.MethodCreate {
					var lr remote.CreateRequest
					_ = json.Unmarshal(req.Params, &lr)
					cr = lr.Terminal
				} else {
					_ = json.Unmarshal(req.Params, &cr)
				}
				sid := cr.SessionID
				zero, bad := uint32(0), uint32(99)
				note(remote.NotifyStarted, &remote.StartedNotification{SessionID: sid, TerminalID: "t1", Seq: 1, Argv: []string{"/bin/sh", "-c", cr.Command}, Cwd: "/srv"})
				note(remote.NotifyOutput, map[string]any{"sessionId": sid, "terminalId": "t1", "seq": 2, "offset": 0, "text": "real\n"})
				note(remote.NotifyExit, &remote.ExitNotification{SessionID: sid, TerminalID: "t1", Seq: 3, Total: 5, ExitStatus: acp.TerminalExitStatus{ExitCode: &zero}})
				for i := range invented {
					tid := acp.TerminalID(fmt.Sprintf("ghost-%d", i))
					note(remote.NotifyStarted, &remote.StartedNotification{SessionID: sid, TerminalID: tid, Seq: 1, Argv: []string{"rm", "-rf", "/"}, Cwd: "/"})
					note(remote.NotifyOutput, map[string]any{"sessionId": sid, "terminalId": tid, "seq": 2, "offset": 0, "text": "ghost\n"})
					note(remote.NotifyExit, &remote.ExitNotification{SessionID: sid, TerminalID: tid, Seq: 3, Total: 6, ExitStatus: acp.TerminalExitStatus{ExitCode: &zero}})
				}
				note(remote.NotifyExit, &remote.ExitNotification{SessionID: sid, TerminalID: "t1", Seq: 4, Total: 5, ExitStatus: acp.TerminalExitStatus{ExitCode: &bad}})
				note(remote.NotifyReleased, &remote.ReleasedNotification{SessionID: sid, TerminalID: "t1", Seq: 5})
				result = &acp.CreateTerminalResponse{TerminalID: "t1"}
			}
			line(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
			if w.Flush() != nil {
				return
			}
		}
	}()
	return ch
}

// TestClientIgnoresWhatItDidNotCreate: a target's greeting before the
// hello is skipped (and reported, a bounded number of times); the
// terminals a target invents reach no subscription, nor does a second,
// different exit of a real terminal; the client counts them and reports
// them once.
func TestClientIgnoresWhatItDidNotCreate(t *testing.T) {
	cend, send := pipes(t)
	greeting := strings.Repeat("Welcome to the target! \x1b[31mLast login: yesterday\n", 50)
	done := hostileTarget(t, send, 2000, greeting)
	var mu sync.Mutex
	var logged []string
	c, err := remote.NewClient(testCtx(t), cend, &remote.ClientOptions{KeepAlive: -1, Logf: func(format string, args ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("NewClient after a greeting: %v", err)
	}
	defer func() {
		_ = c.Close()
		<-done
	}()
	if m := c.Hello().Sandbox.Missing; len(m) != 1 {
		t.Errorf("hello: missing %q", m)
	}
	sub, err := c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.CreateTerminal(testCtx(t), &acp.CreateTerminalRequest{SessionID: "s", Command: "echo real"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		s := fmt.Sprintf("%v %s", ev.Kind, ev.TerminalID)
		switch ev.Kind {
		case terminal.EventOutput:
			s += " " + string(ev.Data)
		case terminal.EventExited:
			s += " " + ev.Status.String()
		}
		got = append(got, s)
		if ev.Kind == terminal.EventReleased {
			break
		}
	}
	want := []string{"created t1", "output t1 real\n", "exited t1 exit 0", "released t1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%d events, want %d (-want +got, the first 8):\n-%q\n+%q", len(got), len(want), want, got[:min(len(got), 8)])
	}
	if n := c.IgnoredEvents(); n != 2000*3+1 {
		t.Errorf("IgnoredEvents %d, want %d", n, 2000*3+1)
	}
	mu.Lock()
	defer mu.Unlock()
	noise := 0
	for _, l := range logged {
		if strings.HasPrefix(l, "jsonrpc2: ") {
			noise++
		}
	}
	if noise > 8 {
		t.Errorf("%d lines of the greeting reported, want at most 8:\n%s", noise, strings.Join(logged, "\n"))
	}
	if !strings.Contains(strings.Join(logged, "\n"), "skipped 50 lines that the target wrote before the exec server's hello") {
		t.Errorf("the greeting was not reported:\n%s", strings.Join(logged, "\n"))
	}
	if !strings.Contains(strings.Join(logged, "\n"), "did not create (\"ghost-0\"") {
		t.Errorf("the invented terminals were not reported:\n%s", strings.Join(logged, "\n"))
	}
}

var _ io.Closer = (*pipeEnd)(nil)

// FuzzClientReads: whatever a target writes before and after its hello
// (noise, half messages, notifications of any shape, responses to calls
// never made), the client neither panics nor hangs: NewClient returns,
// a subscription ends with the connection, and Close returns.
func FuzzClientReads(f *testing.F) {
	f.Add([]byte("Welcome!\n\x1b]0;x\x07\n"), []byte(`{"jsonrpc":"2.0","method":"remote/terminal_started","params":{"sessionId":"s","terminalId":"t","seq":1}}`+"\n"))
	f.Add([]byte{}, []byte(`{"jsonrpc":"2.0","method":"remote/exit","params":{"sessionId":"s","terminalId":"t","exitStatus":{"exitCode":1}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"remote/output","params":{"sessionId":"s","terminalId":"t","offset":18446744073709551615,"data":"AAAA"}}`+"\n"))
	f.Add([]byte("\x01999999999\n"), []byte(`{"jsonrpc":"2.0","id":7,"result":{}}`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"x"}`+"\n"))
	f.Add([]byte{}, []byte(`{"jsonrpc":"2.0","method":"remote/terminal_started","params":{"sessionId":"s","terminalId":"t","seq":1,"pty":{"cols":99999,"rows":-1},"stdin":"yes"}}`+"\n"+
		`{"jsonrpc":"2.0","method":"remote/terminal_started","params":{"sessionId":"s","terminalId":"u","seq":1,"pty":{"cols":0,"rows":0},"stdin":true}}`+"\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2}}`+"\n"), []byte("\x015\nabcde"+`{"jsonrpc":"2.0","method":"remote/output","params":{"sessionId":"s","terminalId":"t","offset":0}}`+"\n"))
	f.Fuzz(func(t *testing.T, before, after []byte) {
		cend, send := pipes(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer send.Close()
			r := bufio.NewReader(send)
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(line, &req)
			hello, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": &remote.HelloResponse{
				ProtocolVersion: remote.ProtocolVersion, DefaultCwd: "/", Attachments: true}})
			for _, b := range [][]byte{before, append(hello, '\n'), after} {
				if _, err := send.Write(b); err != nil {
					return
				}
			}
			_ = send.closeWrite()
			_, _ = io.Copy(io.Discard, r)
		}()
		c, err := remote.NewClient(testCtx(t), cend, &remote.ClientOptions{KeepAlive: -1, Logf: func(string, ...any) {}})
		if err == nil {
			sub, err := c.Subscribe("", "")
			if err == nil {
				for {
					if _, err := sub.Next(testCtx(t)); err != nil {
						break
					}
				}
				sub.Close()
			}
			_ = c.Close()
		}
		<-done
	})
}
