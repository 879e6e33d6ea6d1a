package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// Input over the connection (remote.Client as terminal.Input): a stdin
// pipe, a pty, its size, a password prompt, on the in-process exec
// server and on the far side of a real sshd.

var (
	metaStdin = acp.Meta{terminal.MetaStdin: json.RawMessage("true")}
	metaPTY   = acp.Meta{terminal.MetaPTY: json.RawMessage(`{"cols":80,"rows":24}`)}
)

// inputCases runs the input cases on c; bash says whether the target
// has bash (for read -s).
func inputCases(t *testing.T, c *remote.Client, bash bool) {
	if h := c.Hello(); !h.Input || !h.PTY {
		t.Fatalf("hello: input %v, pty %v; want both", h.Input, h.PTY)
	}
	ctx := testCtx(t)
	t.Run("stdin pipe", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: `read line; echo "got $line"`, Meta: metaStdin})
		if n, err := c.Write(ctx, "s", id, []byte("hello\n")); err != nil || n != 6 {
			t.Fatalf("Write = %d, %v", n, err)
		}
		waitExit(t, c, id)
		if got := output(t, c, id).Output; got != "got hello\n" {
			t.Errorf("output %q, want %q", got, "got hello\n")
		}
		_, err := c.Write(ctx, "s", id, []byte("more\n"))
		if !errors.Is(err, terminal.ErrStdinClosed) || !errors.Is(err, terminal.ErrInvalid) {
			t.Errorf("Write after the exit: %v, want ErrStdinClosed and ErrInvalid", err)
		}
	})
	t.Run("close stdin", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "cat; echo end", Meta: metaStdin})
		if _, err := c.Write(ctx, "s", id, []byte("a\n")); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseStdin("s", id); err != nil {
			t.Fatal(err)
		}
		waitExit(t, c, id)
		if got := output(t, c, id).Output; got != "a\nend\n" {
			t.Errorf("output %q", got)
		}
	})
	t.Run("no stdin asked", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "cat"})
		if _, err := c.Write(ctx, "s", id, []byte("x")); !errors.Is(err, terminal.ErrInvalid) || acp.ErrorCode(err) != acp.CodeInvalidParams ||
			!strings.Contains(err.Error(), "has no stdin") {
			t.Errorf("Write to a terminal without stdin: %v (code %d), want ErrInvalid, invalid params and why", err, acp.ErrorCode(err))
		}
		if err := c.CloseStdin("s", "no-such-terminal"); !errors.Is(err, terminal.ErrNotFound) {
			t.Errorf("CloseStdin of no terminal: %v, want ErrNotFound", err)
		}
		if err := c.Resize("s", id, terminal.Size{Cols: 90}); !errors.Is(err, terminal.ErrInvalid) {
			t.Errorf("Resize of a pipe terminal: %v, want ErrInvalid", err)
		}
		if _, err := c.Write(ctx, "s", id, make([]byte, terminal.MaxStdinWrite+1)); !errors.Is(err, terminal.ErrInvalid) {
			t.Errorf("a write over MaxStdinWrite: %v, want ErrInvalid", err)
		}
	})
	t.Run("tty", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "tty; test -t 1 && echo interactive", Meta: metaPTY})
		waitExit(t, c, id)
		got := output(t, c, id).Output
		if !strings.HasPrefix(got, "/dev/pts/") || !strings.Contains(got, "interactive") {
			t.Errorf("tty on the target printed %q, want a /dev/pts path and interactive", got)
		}
	})
	t.Run("resize", func(t *testing.T) {
		id := create(t, c, &acp.CreateTerminalRequest{Command: "stty size; read x; stty size", Meta: metaPTY})
		if err := c.Resize("s", id, terminal.Size{Cols: 132, Rows: 43}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(ctx, "s", id, []byte("\n")); err != nil {
			t.Fatal(err)
		}
		waitExit(t, c, id)
		if got := output(t, c, id).Output; !strings.Contains(got, "43 132") {
			t.Errorf("stty size after Resize: %q, want 43 132", got)
		}
	})
	t.Run("password prompt", func(t *testing.T) {
		// Echo is off before the prompt shows: the secret typed after it
		// is never echoed (read -s is bash's: stty does it in any shell).
		passwordPrompt(t, c, &acp.CreateTerminalRequest{SessionID: "s",
			Command: `stty -echo; printf 'Password: '; read pw; stty echo; echo; echo "length ${#pw}"`, Meta: metaPTY})
	})
	t.Run("read -s", func(t *testing.T) {
		if !bash {
			t.Skip("no bash on the target")
		}
		// bash turns echo off before it prints read's prompt.
		passwordPrompt(t, c, &acp.CreateTerminalRequest{SessionID: "s", Command: "bash",
			Args: []string{"-c", `read -s -p 'Password: ' pw; echo; echo "length ${#pw}"`}, Meta: metaPTY})
	})
}

// passwordPrompt runs req, a command that prompts "Password: " with echo
// off and prints the answer's length, answers it through c.Write once
// the prompt shows, and checks that the secret is not in the output.
func passwordPrompt(t *testing.T, c *remote.Client, req *acp.CreateTerminalRequest) {
	t.Helper()
	ctx := testCtx(t)
	{
		resp, sub, err := c.CreateTerminalHeld(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		var seen strings.Builder
		for !strings.Contains(seen.String(), "Password: ") {
			ev, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("before the prompt (%q): %v", seen.String(), err)
			}
			seen.Write(ev.Data)
		}
		if _, err := c.Write(ctx, "s", resp.TerminalID, []byte("hunter2\r")); err != nil {
			t.Fatal(err)
		}
		waitExit(t, c, resp.TerminalID)
		got := output(t, c, resp.TerminalID).Output
		if strings.Contains(got, "hunter2") || !strings.Contains(got, "length 7") {
			t.Errorf("output %q: want length 7 and no secret", got)
		}
	}
}

// TestInputInProcess: the input cases against an exec server in this
// process.
func TestInputInProcess(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1})
	inputCases(t, s.c, hasBash())
}

// TestInputSSH: the input cases on the far side of a real sshd, in the
// exec server's sandbox.
func TestInputSSH(t *testing.T) {
	t.Parallel()
	e := needSSH(t)
	c, _ := e.dial(t, t.TempDir())
	inputCases(t, c, hasBash())
}

// TestInputPodman: the input cases in a container (busybox's sh, stty
// and tty), the exec server there copied in and sandboxed.
func TestInputPodman(t *testing.T) {
	t.Parallel()
	needPodman(t)
	name := startContainer(t, containerOptions{})
	c, _, _ := dialContainer(t, "podman://"+name+containerWS, remote.CommandOptions{})
	inputCases(t, c, false)
}

// hasBash: the sshd and in-process targets are this machine.
func hasBash() bool {
	_, err := exec.LookPath("bash")
	return err == nil
}

// TestClientPTYOption: ClientOptions.PTY puts every terminal on a pty
// there, unless the create asks otherwise itself.
func TestClientPTYOption(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1, PTY: &terminal.Size{Cols: 100, Rows: 20}})
	sub, err := s.c.Subscribe("s", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "stty size"})
	waitExit(t, s.c, id)
	if got := output(t, s.c, id).Output; got != "20 100\n" {
		t.Errorf("stty size: %q, want 20 100", got)
	}
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == terminal.EventCreated {
			if ev.Info.PTY == nil || *ev.Info.PTY != (terminal.Size{Cols: 100, Rows: 20}) {
				t.Errorf("EventCreated's Info.PTY = %v", ev.Info.PTY)
			}
			break
		}
	}
}

// scriptedInputTarget is an exec server that says what hello says and
// answers remote/write with answer (a JSON result or error member).
func scriptedInputTarget(t *testing.T, end *pipeEnd, hello *remote.HelloResponse, answer string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer end.Close()
		sc := bufio.NewScanner(end)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
				continue
			}
			msg := `"result":{}`
			switch req.Method {
			case remote.MethodHello:
				b, _ := json.Marshal(hello)
				msg = `"result":` + string(b)
			case remote.MethodWrite:
				if answer == "" {
					continue // never answered
				}
				msg = answer
			}
			if _, err := io.WriteString(end, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,`+msg+"}\n"); err != nil {
				return
			}
		}
	}()
	return done
}

// TestInputOldOrHostileServer: an exec server of an earlier release
// (no Input in its hello) is not asked at all: each call fails at once
// with ErrInvalid; one that lies about a write's count gets an error,
// never a count past what was written; one that never answers holds the
// write no longer than its ctx.
func TestInputOldOrHostileServer(t *testing.T) {
	t.Parallel()
	old := &remote.HelloResponse{ProtocolVersion: remote.ProtocolVersion, OS: "linux", DefaultCwd: "/", Version: "0.3"}
	newer := *old
	newer.Input = true
	for _, tc := range []struct {
		name   string
		hello  *remote.HelloResponse
		answer string
		check  func(n int, err error) bool
	}{
		{"old", old, `"result":{"n":1}`, func(n int, err error) bool {
			return n == 0 && errors.Is(err, terminal.ErrInvalid) && strings.Contains(err.Error(), "takes no input")
		}},
		{"too many", &newer, `"result":{"n":1000000}`, func(n int, err error) bool { return n == 0 && err != nil }},
		{"too few", &newer, `"result":{"n":-5}`, func(n int, err error) bool { return n == 0 && err != nil }},
		{"error past the data", &newer, `"error":{"code":-32602,"message":"closed","data":{"kind":"invalid","stdinClosed":true,"written":99999}}`,
			func(n int, err error) bool { return n == 4 && errors.Is(err, terminal.ErrStdinClosed) }},
		{"never answers", &newer, "", func(n int, err error) bool { return n == 0 && errors.Is(err, context.DeadlineExceeded) }},
		{"negative written", &newer, `"error":{"code":-32602,"message":"x","data":{"kind":"invalid","written":-3}}`,
			func(n int, err error) bool { return n == 0 && errors.Is(err, terminal.ErrInvalid) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cend, send := pipes(t)
			done := scriptedInputTarget(t, send, tc.hello, tc.answer)
			c, err := remote.NewClient(testCtx(t), cend, &remote.ClientOptions{KeepAlive: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = c.Close()
				<-done
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := c.Write(ctx, "s", "t", []byte("abcd"))
			if !tc.check(n, err) {
				t.Errorf("Write = %d, %v", n, err)
			}
			if tc.hello == old {
				if err := c.CloseStdin("s", "t"); !errors.Is(err, terminal.ErrInvalid) {
					t.Errorf("CloseStdin: %v", err)
				}
				if err := c.Resize("s", "t", terminal.Size{Cols: 1}); !errors.Is(err, terminal.ErrInvalid) {
					t.Errorf("Resize: %v", err)
				}
			}
		})
	}
}
