//go:build linux

package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
)

func TestStdinAnswersARead(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		opts := &Options{}
		if sandboxed {
			ws := t.TempDir()
			opts = &Options{DefaultCwd: ws, Policy: &Policy{Roots: []string{ws}, Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite}}}
		}
		m := newTestManager(t, opts)
		info := mustCreate(t, m, Request{Command: `read line; echo "got $line"`, Stdin: true})
		if !info.Stdin {
			t.Errorf("Info.Stdin = false for a create with Stdin")
		}
		if n, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("hello\n")); err != nil || n != 6 {
			t.Fatalf("sandboxed=%v: Write = %d, %v", sandboxed, n, err)
		}
		wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
		if got := mustOutput(t, m, info).Text; got != "got hello\n" {
			t.Errorf("sandboxed=%v: output %q, want %q", sandboxed, got, "got hello\n")
		}
		// Safe after the exit: a clear error, no panic, no hang.
		_, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("more\n"))
		if !errors.Is(err, ErrStdinClosed) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Write after exit: %v, want ErrStdinClosed and ErrInvalid", err)
		}
		mustRelease(t, m, info)
		if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("x")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Write after release: %v, want ErrNotFound", err)
		}
	}
}

func TestCloseStdinEndsCat(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "cat; echo end", Stdin: true})
	for _, s := range []string{"a\n", "b\n"} {
		if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.CloseStdin(info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	if err := m.CloseStdin(info.SessionID, info.TerminalID); err != nil {
		t.Errorf("second CloseStdin: %v", err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	if got := mustOutput(t, m, info).Text; got != "a\nb\nend\n" {
		t.Errorf("output %q", got)
	}
	_, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("x"))
	if !errors.Is(err, ErrStdinClosed) {
		t.Errorf("Write after CloseStdin: %v, want ErrStdinClosed", err)
	}
}

func TestStdinRefusals(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	plain := mustCreate(t, m, Request{Command: "true"})
	if _, err := m.Write(testCtx(t), plain.SessionID, plain.TerminalID, []byte("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("Write without Stdin: %v, want ErrInvalid", err)
	}
	if err := m.CloseStdin(plain.SessionID, plain.TerminalID); !errors.Is(err, ErrInvalid) {
		t.Errorf("CloseStdin without Stdin: %v, want ErrInvalid", err)
	}
	in := mustCreate(t, m, Request{Command: "cat >/dev/null", Stdin: true})
	big := make([]byte, MaxStdinWrite+1)
	if n, err := m.Write(testCtx(t), in.SessionID, in.TerminalID, big); !errors.Is(err, ErrInvalid) || n != 0 {
		t.Errorf("Write of %d bytes: %d, %v, want ErrInvalid", len(big), n, err)
	}
	if _, err := m.Write(testCtx(t), in.SessionID, "term_nope", []byte("x")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Write to an unknown terminal: %v, want ErrNotFound", err)
	}
}

// A command that does not read: a write larger than the pipe blocks
// until ctx ends, and returns ctx's error with what went in.
func TestStdinWriteBoundedByContext(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 1000", Stdin: true})
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	data := bytes.Repeat([]byte("x"), MaxStdinWrite)
	n, err := m.Write(ctx, info.SessionID, info.TerminalID, data)
	if !errors.Is(err, context.Canceled) || n >= len(data) {
		t.Errorf("Write with a cancelled ctx: %d, %v, want context.Canceled and a short count", n, err)
	}
	// The pipe is still usable for a write that fits.
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, nil); err != nil {
		t.Errorf("empty Write afterwards: %v", err)
	}
	mustRelease(t, m, info)
}

// The command exits while a write waits on a full pipe whose read end a
// background child still holds: the write ends with ErrStdinClosed.
func TestStdinWriteEndsAtExit(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 1000 <&0 & head -c 1 >/dev/null", Stdin: true})
	data := bytes.Repeat([]byte("y"), MaxStdinWrite)
	n, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, data)
	if !errors.Is(err, ErrStdinClosed) || n >= len(data) {
		t.Errorf("Write across the exit: %d, %v, want ErrStdinClosed and a short count", n, err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	mustRelease(t, m, info)
}

// Release while a write waits (or before it): the write returns an
// error, nothing hangs. The pipe cannot take 1 MiB from a command that
// does not read, so the write cannot succeed either way.
func TestStdinReleaseDuringWrite(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "sleep 1000", Stdin: true})
	res := make(chan error, 1)
	go func() {
		_, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, bytes.Repeat([]byte("z"), MaxStdinWrite))
		res <- err
	}()
	mustRelease(t, m, info)
	if err := <-res; err == nil {
		t.Errorf("a 1 MiB write to a command that does not read succeeded")
	}
}

// TestMetaStdin: terminal/create's _meta asks for a stdin pipe
// (MetaStdin), which Write then answers a read through; without it the
// command's stdin is /dev/null and Write is refused.
func TestMetaStdin(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	ctx := testCtx(t)
	resp, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: `read line; echo "got $line"`,
		Meta: acp.Meta{MetaStdin: json.RawMessage("true")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(ctx, "s", resp.TerminalID, []byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, "s", resp.TerminalID); err != nil {
		t.Fatal(err)
	}
	if out, _ := m.Output(ctx, "s", resp.TerminalID); out.Text != "got hi\n" {
		t.Errorf("output %q, want %q", out.Text, "got hi\n")
	}
	plain, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "cat",
		Meta: acp.Meta{MetaStdin: json.RawMessage("false")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(ctx, "s", plain.TerminalID, []byte("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("Write to a terminal created with %s false: %v, want ErrInvalid", MetaStdin, err)
	}
}
