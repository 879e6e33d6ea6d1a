//go:build unix

package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// Held creates (CreateTerminalHeld) over the wire: every byte, an exit
// before the answer, a connection dropped, a target that lies about
// which terminal is the create's.

// scriptedTarget answers the hello, and a remote/create with the
// terminal's whole stream (start, output, exit) before the create's
// answer, and a remote/subscribe with the stream again; it then ends the
// connection without a release when drop is set. With ghost it first
// starts an invented terminal under the create's tag.
func scriptedTarget(t *testing.T, end io.ReadWriteCloser, drop, ghost bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer end.Close()
		w := bufio.NewWriter(end)
		line := func(v any) {
			b, _ := json.Marshal(v)
			w.Write(append(b, '\n'))
		}
		note := func(method string, params any) {
			line(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		}
		// stream sends terminal t1's whole stream: start, output, exit.
		stream := func(sid acp.SessionID, command string, window uint64, tag string) {
			zero := uint32(0)
			note(remote.NotifyStarted, &remote.StartedNotification{SessionID: sid, TerminalID: "t1", Seq: 1,
				Argv: []string{"/bin/sh", "-c", command}, Cwd: "/srv", Window: window, Tag: tag})
			note(remote.NotifyOutput, map[string]any{"sessionId": sid, "terminalId": "t1", "seq": 2, "offset": 0, "text": "all of it\n"})
			note(remote.NotifyExit, &remote.ExitNotification{SessionID: sid, TerminalID: "t1", Seq: 3, Total: 10, ExitStatus: acp.TerminalExitStatus{ExitCode: &zero}})
		}
		sc := bufio.NewScanner(end)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
				continue
			}
			var result any = struct{}{}
			switch req.Method {
			case remote.MethodHello:
				result = &remote.HelloResponse{ProtocolVersion: remote.ProtocolVersion, OS: "linux", Arch: "amd64",
					DefaultCwd: "/srv", Isolation: "group", Sandbox: remote.SandboxInfo{Mode: "off", Network: "allow"}}
			case remote.MethodCreate:
				var cr remote.CreateRequest
				_ = json.Unmarshal(req.Params, &cr)
				if ghost {
					note(remote.NotifyStarted, &remote.StartedNotification{SessionID: cr.Terminal.SessionID, TerminalID: "ghost", Seq: 1,
						Argv: []string{"rm", "-rf", "/"}, Cwd: "/", Window: cr.Window, Tag: cr.Tag})
					note(remote.NotifyOutput, map[string]any{"sessionId": cr.Terminal.SessionID, "terminalId": "ghost", "seq": 2, "offset": 0, "text": "ghost\n"})
				}
				stream(cr.Terminal.SessionID, cr.Terminal.Command, cr.Window, cr.Tag)
				result = &acp.CreateTerminalResponse{TerminalID: "t1"}
			case remote.MethodSubscribe:
				var sr remote.SubscribeRequest
				_ = json.Unmarshal(req.Params, &sr)
				if sr.TerminalID == "t1" {
					stream(sr.SessionID, "echo all of it", sr.Window, "")
				}
			}
			line(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
			if w.Flush() != nil {
				return
			}
			if drop && (req.Method == remote.MethodCreate && !ghost || req.Method == remote.MethodSubscribe) {
				return
			}
		}
	}()
	return done
}

// TestCreateTerminalHeldExitBeforeAnswer: a command that has exited
// before its create is answered still reaches the held subscription
// whole, start to exit; and when the connection then drops without a
// release, the subscription ends with a release saying so, then
// ErrDisconnected, never a wait for ever.
func TestCreateTerminalHeldExitBeforeAnswer(t *testing.T) {
	for _, ghost := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "ghost"}[ghost], func(t *testing.T) { heldExitBeforeAnswer(t, ghost) })
	}
}

// heldExitBeforeAnswer is TestCreateTerminalHeldExitBeforeAnswer, with
// a target that first starts an invented terminal under the create's tag
// (ghost): the answer decides which terminal the subscription follows.
func heldExitBeforeAnswer(t *testing.T, ghost bool) {
	cend, send := pipes(t)
	done := scriptedTarget(t, send, true, ghost)
	c, err := remote.NewClient(testCtx(t), cend, &remote.ClientOptions{KeepAlive: -1, Where: "ssh://test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Close()
		<-done
	}()
	ctx := testCtx(t)
	resp, sub, err := c.CreateTerminalHeld(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "echo all of it"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got []string
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			if !errors.Is(err, remote.ErrDisconnected) {
				t.Errorf("the subscription ended with %v, want ErrDisconnected", err)
			}
			break
		}
		if ev.TerminalID != resp.TerminalID {
			t.Errorf("event of terminal %q", ev.TerminalID)
		}
		s := ev.Kind.String()
		switch ev.Kind {
		case terminal.EventCreated:
			s += " " + ev.Info.Command
		case terminal.EventOutput:
			s += " " + strings.TrimSpace(string(ev.Data))
		case terminal.EventReleased:
			s += " lost=" + ev.Lost
		}
		got = append(got, s)
	}
	// An invented terminal took the create's tag: the real one is
	// described by what runs, not as asked.
	created := map[bool]string{false: "created echo all of it", true: "created /bin/sh"}[ghost]
	want := []string{created, "output all of it", "exited",
		"released lost=the connection to ssh://test was lost and the target killed the command"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCreateTerminalHeldEveryByte: a held create over a real exec server
// gets every byte of a command that writes far more than the window and
// the subscriber buffer while its subscriber is slow, with nothing
// dropped, then the exit.
func TestCreateTerminalHeldEveryByte(t *testing.T) {
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1, Window: 64 << 10, SubscriberBuffer: 16 << 10})
	ctx := testCtx(t)
	const n = 4 << 20
	resp, sub, err := s.c.CreateTerminalHeld(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "head", Args: []string{"-c", "4194304", "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got, dropped uint64
	for i := 0; ; i++ {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.TerminalID != resp.TerminalID {
			t.Fatalf("event of another terminal %q", ev.TerminalID)
		}
		got += uint64(len(ev.Data))
		dropped += ev.Dropped
		if ev.Kind == terminal.EventExited {
			break
		}
		if i%8 == 0 {
			runtime.Gosched() // a subscriber that falls behind now and then
		}
	}
	if got != n || dropped != 0 {
		t.Errorf("got %d bytes, %d dropped; want %d, none dropped", got, dropped, n)
	}
}

// TestCreateTagBounded: the exec server refuses a create whose tag is
// longer than a client's ever is, before it runs anything.
func TestCreateTagBounded(t *testing.T) {
	cend, send := pipes(t)
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(context.Background(), send, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: dir}})
	}()
	defer func() {
		_ = cend.Close()
		<-done
	}()
	call := func(id int, method string, params any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := cend.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	call(1, remote.MethodHello, &remote.HelloRequest{ProtocolVersion: remote.ProtocolVersion})
	call(2, remote.MethodCreate, &remote.CreateRequest{Terminal: acp.CreateTerminalRequest{SessionID: "s", Command: "touch ran"},
		Tag: strings.Repeat("x", 65)})
	sc := bufio.NewScanner(cend)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID    int `json:"id"`
			Error *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID != 2 {
			continue
		}
		if m.Error == nil || m.Error.Code != acp.CodeInvalidParams {
			t.Errorf("a create with a 65-byte tag: %s, want invalid params", sc.Bytes())
		}
		break
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// TestSubscribeHeldOneTerminal: a held subscription to one running
// terminal gets all of its output, from the replay on, with nothing
// dropped, though it reads slowly and the window is small.
func TestSubscribeHeldOneTerminal(t *testing.T) {
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1, Window: 64 << 10, SubscriberBuffer: 16 << 10})
	ctx := testCtx(t)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "head -c 2097152 /dev/zero"})
	sub, err := s.c.SubscribeHeld("s", id)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got, dropped uint64
	for i := 0; ; i++ {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += uint64(len(ev.Data))
		dropped += ev.Dropped
		if ev.Kind == terminal.EventExited {
			break
		}
		if i%8 == 0 {
			runtime.Gosched()
		}
	}
	if got != 2<<20 || dropped != 0 {
		t.Errorf("got %d bytes, %d dropped; want %d, none dropped", got, dropped, 2<<20)
	}
}
