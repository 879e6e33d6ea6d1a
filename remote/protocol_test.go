//go:build unix

package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
	"github.com/acpterm/acpterm/terminal"
)

// pipeEnd is one end of two os.Pipes: it reads one and writes the other.
type pipeEnd struct {
	r *os.File
	w *os.File
}

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeEnd) Close() error                { return errors.Join(p.w.Close(), p.r.Close()) }

// closeWrite ends what this end sends: the peer sees the end of input.
func (p *pipeEnd) closeWrite() error { return p.w.Close() }

func pipes(t testing.TB) (client, server *pipeEnd) {
	t.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return &pipeEnd{r: r1, w: w2}, &pipeEnd{r: r2, w: w1}
}

// testCtx bounds one call of a test (remotetest.Ctx).
func testCtx(t testing.TB) context.Context { return remotetest.Ctx(t) }

// served is an exec server running in-process on a pipe, and its client.
type served struct {
	c      *remote.Client
	cend   *pipeEnd
	done   chan error
	cancel context.CancelFunc
}

func serve(t testing.TB, sopts *remote.ServerOptions, copts *remote.ClientOptions) *served {
	t.Helper()
	cend, send := pipes(t)
	if sopts == nil {
		sopts = &remote.ServerOptions{}
	}
	if sopts.Terminal == nil {
		sopts.Terminal = &terminal.Options{DefaultCwd: t.TempDir()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{cend: cend, done: make(chan error, 1), cancel: cancel}
	go func() { s.done <- remote.Serve(ctx, send, sopts) }()
	c, err := remote.NewClient(testCtx(t), cend, copts)
	if err != nil {
		cancel()
		<-s.done
		t.Fatalf("NewClient: %v", err)
	}
	s.c = c
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return s
}

// create creates a terminal in session "s" unless req names another
// (remotetest.Create).
func create(t testing.TB, c *remote.Client, req *acp.CreateTerminalRequest) acp.TerminalID {
	t.Helper()
	return remotetest.Create(t, c, req)
}

func TestHello(t *testing.T) {
	dir := t.TempDir()
	s := serve(t, &remote.ServerOptions{Version: "9.9", Terminal: &terminal.Options{DefaultCwd: dir}}, nil)
	h := s.c.Hello()
	if h.ProtocolVersion != remote.ProtocolVersion || h.Version != "9.9" || h.DefaultCwd != dir || h.OS == "" || h.Isolation == "" {
		t.Errorf("hello = %+v", h)
	}
	if h.Sandbox.Mode != "off" {
		t.Errorf("sandbox mode %q, want off", h.Sandbox.Mode)
	}
}

func TestOutputExitAndStream(t *testing.T) {
	s := serve(t, nil, nil)
	sub, err := s.c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx := testCtx(t)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "printf 'hello\\377'; echo world >&2; exit 3"})
	w, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatal(err)
	}
	if w.ExitCode == nil || *w.ExitCode != 3 || w.Signal != nil {
		t.Errorf("wait = %v", acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal})
	}
	out, err := s.c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatal(err)
	}
	if out.Output != "hello\ufffdworld\n" || out.ExitStatus == nil {
		t.Errorf("output = %q, exit %v", out.Output, out.ExitStatus)
	}
	// The stream carries the raw bytes, in order, then the exit.
	kinds, data := streamUntilExit(t, sub, id, 3)
	if want := []terminal.EventKind{terminal.EventCreated, terminal.EventOutput, terminal.EventExited}; !slicesEqual(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if string(data) != "hello\xffworld\n" {
		t.Errorf("streamed %q", data)
	}
	if _, err := s.c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	ev, err := sub.Next(ctx)
	if err != nil || ev.Kind != terminal.EventReleased {
		t.Errorf("after release: %v %v", ev.Kind, err)
	}
	// Release invalidates: the same error kind and code as locally.
	_, err = s.c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if !errors.Is(err, terminal.ErrNotFound) || acp.ErrorCode(err) != acp.CodeInvalidParams || acp.WireError(err).Code != acp.CodeInvalidParams {
		t.Errorf("output after release: %v (code %d)", err, acp.ErrorCode(err))
	}
}

// streamUntilExit reads the terminal's events up to its exit, which must
// be code with nothing dropped, and returns their kinds (runs of one kind
// as one) and the output.
func streamUntilExit(t *testing.T, sub terminal.Events, id acp.TerminalID, code uint32) ([]terminal.EventKind, []byte) {
	t.Helper()
	ctx := testCtx(t)
	var kinds []terminal.EventKind
	var data []byte
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.TerminalID != id {
			t.Fatalf("event of terminal %q", ev.TerminalID)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
		data = append(data, ev.Data...)
		if ev.Kind == terminal.EventExited {
			if ev.Status.ExitCode == nil || *ev.Status.ExitCode != code || ev.Dropped != 0 {
				t.Errorf("exit event %+v", ev)
			}
			return kinds, data
		}
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestKillKeepsTerminalAndSignalName(t *testing.T) {
	s := serve(t, nil, nil)
	ctx := testCtx(t)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "sleep", Args: []string{"100"}})
	if _, err := s.c.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	w, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatal(err)
	}
	if w.Signal == nil || *w.Signal != "SIGTERM" || w.ExitCode != nil {
		t.Errorf("after kill: %v", acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal})
	}
	if _, err := s.c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Errorf("output after kill: %v", err)
	}
}

func TestTruncation(t *testing.T) {
	s := serve(t, nil, nil)
	ctx := testCtx(t)
	limit := uint64(10)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "printf 0123456789abcdef", OutputByteLimit: &limit})
	if _, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	out, err := s.c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatal(err)
	}
	if out.Output != "6789abcdef" || !out.Truncated {
		t.Errorf("output %q truncated %v", out.Output, out.Truncated)
	}
}

// A server's refusal keeps its code and kind on this side.
func TestErrorsKeepTheirKind(t *testing.T) {
	s := serve(t, nil, nil)
	ctx := testCtx(t)
	_, err := s.c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "x", Cwd: ptr("relative")})
	if !errors.Is(err, terminal.ErrInvalid) || acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("relative cwd: %v", err)
	}
	_, err = s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: "nope"})
	if !errors.Is(err, terminal.ErrNotFound) {
		t.Errorf("unknown terminal: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// The client drops the connection mid-command: the server kills it at
// once (a command that ignores SIGTERM included, with no grace period)
// and returns.
func TestDeadManKillsAtOnce(t *testing.T) {
	cend, send := pipes(t)
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(context.Background(), send, &remote.ServerOptions{
			Terminal: &terminal.Options{DefaultCwd: dir, KillGrace: time.Minute}})
	}()
	c, err := remote.NewClient(testCtx(t), cend, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	id := create(t, c, &acp.CreateTerminalRequest{Command: "trap '' TERM; echo ready; while :; do sleep 1; done"})
	pid := 0
	for ready := false; !ready; {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == terminal.EventCreated {
			pid = ev.Info.PID
		}
		ready = bytes.Contains(ev.Data, []byte("ready"))
	}
	waitErr := make(chan error, 1)
	go func() {
		_, err := c.WaitForTerminalExit(context.Background(), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
		waitErr <- err
	}()
	start := time.Now()
	_ = cend.closeWrite()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(remote.ShutdownBound):
		t.Fatalf("Serve did not return within %v of the end of its input", remote.ShutdownBound)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Serve took %v to end a command that ignores SIGTERM (kill grace 1m)", el)
	}
	if processAlive(pid) {
		t.Errorf("pid %d still runs", pid)
	}
	select {
	case err := <-waitErr:
		if !errors.Is(err, remote.ErrDisconnected) {
			t.Errorf("wait after the drop: %v, want ErrDisconnected", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a wait hangs after the connection dropped")
	}
	if _, err := sub.Next(testCtx(t)); err == nil {
		for err == nil {
			_, err = sub.Next(testCtx(t))
		}
		if !errors.Is(err, remote.ErrDisconnected) {
			t.Errorf("subscription ends with %v", err)
		}
	}
	_ = c.Close()
	_ = send.Close()
}

// processAlive reports whether pid is a live process (not a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

var _ io.ReadWriteCloser = (*pipeEnd)(nil)
