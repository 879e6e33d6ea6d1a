package terminal

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// inputTestClient serves terminals and input with a Manager.
type inputTestClient struct {
	testClient
	acp.TerminalInputHandler
}

// wirePair connects an agent to a client that serves m, with input
// (InputHandler) when input is true.
func wirePair(t *testing.T, m *Manager, input bool) *acp.AgentConn {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	var client acp.Client = testClient{m}
	if input {
		client = inputTestClient{testClient{m}, InputHandler(m)}
	}
	cc := acp.NewClientConn(client, clientIn, clientOut, nil)
	ac := acp.NewAgentConn(testAgent{}, agentIn, agentOut, nil)
	t.Cleanup(func() { cc.Close(); ac.Close(); cc.Wait(); ac.Wait() })
	if _, err := cc.Initialize(testCtx(t), &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion1,
		ClientCapabilities: &acp.ClientCapabilities{Meta: acp.Meta{MetaPTY: []byte("true"), MetaStdin: []byte("true")}}}); err != nil {
		t.Fatal(err)
	}
	return ac
}

// waitForOutput waits, on the host's side, until the terminal's output
// contains s.
func waitForOutput(t *testing.T, m *Manager, sid acp.SessionID, tid acp.TerminalID, s string) {
	t.Helper()
	sub, err := m.Subscribe(sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seen strings.Builder
	for !strings.Contains(seen.String(), s) {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatalf("waiting for %q in %q: %v", s, seen.String(), err)
		}
		seen.Write(ev.Data)
	}
}

// TestInputOverTheWire: an agent written with the SDK answers a `read
// line` on a stdin pipe and a `read -s` password prompt on a pty, through
// the input methods of its TerminalHandle; the secret is not in the
// output.
func TestInputOverTheWire(t *testing.T) {
	m := newTestManager(t, nil)
	ac := wirePair(t, m, true)
	ctx := testCtx(t)
	if !ac.ServesTerminalInput() {
		t.Fatal("input not advertised")
	}

	pipe, err := ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: `read line; echo "got $line"; cat; echo end`},
		&acp.TerminalOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	if err := pipe.Write(ctx, "hello\nrest\n"); err != nil {
		t.Fatal(err)
	}
	if err := pipe.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := pipe.WaitForExit(ctx); err != nil || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("pipe terminal: %+v, %v", st, err)
	}
	if out, err := pipe.Output(ctx); err != nil || out.Output != "got hello\nrest\nend\n" {
		t.Fatalf("pipe output %q, %v", out.Output, err)
	}

	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for read -s")
	}
	pty, err := ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: bash,
		Args: []string{"-c", `read -s -p "Password: " pw; echo; echo "length ${#pw}"; stty size`}},
		&acp.TerminalOptions{PTY: &acp.V2TerminalSize{Cols: 100, Rows: 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer pty.Close()
	// bash turns echo off before it prints the prompt.
	waitForOutput(t, m, "s", pty.ID, "Password: ")
	if err := pty.Resize(ctx, 120, 0); err != nil {
		t.Fatal(err)
	}
	if err := pty.Write(ctx, "s3cr3t-value\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := pty.WaitForExit(ctx); err != nil || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("pty terminal: %+v, %v", st, err)
	}
	out, err := pty.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Password:\nlength 12\n30 120\n"; out.Output != want {
		t.Errorf("pty output %q, want %q", out.Output, want)
	}
	if strings.Contains(out.Output, "s3cr3t") {
		t.Errorf("the secret is in the output: %q", out.Output)
	}
}

// TestInputWireErrors: each way a write can go wrong is a -32602 whose
// message says which.
func TestInputWireErrors(t *testing.T) {
	m := newTestManager(t, nil)
	ac := wirePair(t, m, true)
	ctx := testCtx(t)
	wantErr := func(what string, err error, msg string) {
		t.Helper()
		var e *acp.Error
		if acp.ErrorCode(err) != acp.CodeInvalidParams || !errors.As(err, &e) || !strings.Contains(e.Message, msg) {
			t.Errorf("%s: %v, want -32602 with %q", what, err, msg)
		}
	}
	_, err := ac.ExtMethod(ctx, acp.MethodTerminalWrite, &acp.WriteTerminalRequest{SessionID: "s", TerminalID: "term_nope", Data: "x"})
	wantErr("unknown terminal", err, `terminal "term_nope" not found`)

	plain, err := ac.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	wantErr("no stdin", plain.Write(ctx, "x"), "has no stdin")
	wantErr("resize pipes", plain.Resize(ctx, 10, 10), "not on a pty")
	wantErr("close no stdin", plain.CloseStdin(ctx), "has no stdin")

	closed, err := ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep 30"}, &acp.TerminalOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	wantErr("too big", closed.Write(ctx, strings.Repeat("x", MaxStdinWrite+1)), "at most")
	if err := closed.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	wantErr("closed stdin", closed.Write(ctx, "x"), "stdin is closed: it was closed")

	exited, err := ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "true"}, &acp.TerminalOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exited.Close()
	if _, err := exited.WaitForExit(ctx); err != nil {
		t.Fatal(err)
	}
	wantErr("exited", exited.Write(ctx, "x"), "the command has exited")
	if err := exited.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exited.Write(ctx, "x"); !errors.Is(err, acp.ErrTerminalReleased) {
		t.Errorf("write after release: %v, want ErrTerminalReleased", err)
	}
}

// TestInputNotServed: a client whose runtime serves no input advertises
// none; the handle refuses without a round trip, the raw method is
// -32601; a stdin asked for in _meta alone still gets a pipe (MetaStdin).
func TestInputNotServed(t *testing.T) {
	m := newTestManager(t, nil)
	ac := wirePair(t, m, false)
	ctx := testCtx(t)
	if ac.ServesTerminalInput() {
		t.Fatal("input advertised without InputHandler")
	}
	term, err := ac.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "cat",
		Meta: acp.Meta{MetaStdin: []byte("true")}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if err := term.Write(ctx, "x"); !errors.Is(err, acp.ErrNoTerminalInput) {
		t.Errorf("handle write: %v, want ErrNoTerminalInput", err)
	}
	_, err = ac.ExtMethod(ctx, acp.MethodTerminalWrite, &acp.WriteTerminalRequest{SessionID: "s", TerminalID: term.ID, Data: "x"})
	if acp.ErrorCode(err) != acp.CodeMethodNotFound {
		t.Errorf("raw write: %v, want -32601", err)
	}
	if infos := m.Terminals("s"); len(infos) != 1 || !infos[0].Stdin {
		t.Errorf("terminal/create with %s: %+v, want a stdin pipe", MetaStdin, infos)
	}
}

// BenchmarkInputOverTheWire: one _acpterm/terminal/write round trip of a
// short line, agent to client over in-memory pipes, into `cat`'s stdin.
func BenchmarkInputOverTheWire(b *testing.B) {
	m := NewManager(&Options{DefaultCwd: b.TempDir()})
	defer m.Close()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	cc := acp.NewClientConn(inputTestClient{testClient{m}, InputHandler(m)}, clientIn, clientOut, nil)
	ac := acp.NewAgentConn(testAgent{}, agentIn, agentOut, nil)
	defer func() { cc.Close(); ac.Close(); cc.Wait(); ac.Wait() }()
	ctx := testCtx(b)
	if _, err := cc.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion1,
		ClientCapabilities: &acp.ClientCapabilities{Meta: acp.Meta{MetaStdin: []byte("true")}}}); err != nil {
		b.Fatal(err)
	}
	term, err := ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "cat"},
		&acp.TerminalOptions{Stdin: true})
	if err != nil {
		b.Fatal(err)
	}
	defer term.Close()
	line := strings.Repeat("x", 63) + "\n"
	for b.Loop() {
		if err := term.Write(ctx, line); err != nil {
			b.Fatal(err)
		}
	}
}
