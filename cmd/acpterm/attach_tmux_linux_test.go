//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

func init() {
	registerHostile("attach-pw", func() int { return serveAgent(&passworder{ended: make(chan string, 2)}) })
	registerHostile("attach-pw-turn", func() int { return serveAgent(&passworder{ended: make(chan string, 2), inTurn: true}) })
}

// hostileTitle is what the password command prints first: a sequence that
// would set the user's window title and one that colours, which acpterm
// must not pass on to the user's terminal, and the text between them.
const hostileTitle = `printf '\033]2;pwned\007\033[31mcoloured\033[0m\n'; `

// passworder plays an agent that runs a command which asks for a password
// on a pty (bash's read -s), and one that reads a line from a stdin
// pipe, both through acpterm's input extension: "start" starts both
// under tool calls and ends the turn, leaving them to the user; "status"
// says how each ended and what output it read. With inTurn, "start" runs
// the password prompt alone and waits for it within the turn, as an agent
// running sudo would, and then says how it ended.
type passworder struct {
	baseAgent
	ended  chan string
	inTurn bool
}

func (a *passworder) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "sess_pw"}, nil
}

func (a *passworder) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	end := &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}
	switch promptText(req) {
	case "start":
		if !conn.ServesTerminalInput() {
			return end, agentSay(ctx, conn, req.SessionID, "the client takes no input")
		}
		for _, c := range []struct {
			name string
			req  acp.CreateTerminalRequest
			opts acp.TerminalOptions
		}{
			{"password", acp.CreateTerminalRequest{Command: "bash", Args: []string{"-c", hostileTitle + `read -s -p "Password: " pw; echo; echo "got ${#pw} characters"`}},
				acp.TerminalOptions{PTY: &acp.V2TerminalSize{}}},
			{"line", acp.CreateTerminalRequest{Command: `read line; echo "line: $line"`}, acp.TerminalOptions{Stdin: true}},
		} {
			if a.inTurn && c.name != "password" {
				continue
			}
			c.req.SessionID = req.SessionID
			term, err := conn.CreateTerminalWith(ctx, &c.req, &c.opts)
			if err != nil {
				return end, agentSay(ctx, conn, req.SessionID, c.name+": "+err.Error())
			}
			call := acp.NewTerminalToolCall(acp.ToolCallID("call_"+c.name), c.name, term.ID)
			if err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
				return nil, err
			}
			go a.await(conn, c.name, term)
		}
		if !a.inTurn {
			return end, agentSay(ctx, conn, req.SessionID, "started both")
		}
		fallthrough
	case "status":
		n := 2
		if a.inTurn {
			n = 1
		}
		for range n {
			select {
			case s := <-a.ended:
				if err := agentSay(ctx, conn, req.SessionID, s); err != nil {
					return nil, err
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return end, nil
	}
	return end, agentSay(ctx, conn, req.SessionID, "say start or status")
}

// await waits, beyond the turn, for term's command to end, and keeps what
// it saw for "status".
func (a *passworder) await(conn *acp.AgentConn, name string, term *acp.TerminalHandle) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		defer stop()
		select {
		case <-conn.Done():
		case <-ctx.Done():
		}
	}()
	st, err := term.WaitForExit(ctx)
	if err != nil {
		return
	}
	out, err := term.Output(ctx)
	if err != nil {
		return
	}
	a.ended <- fmt.Sprintf("%s ended: %s: %q", name, acp.TerminalExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}, out.Output)
}

// TestAttachPasswordTmux: a person at a terminal (tmux) attaches to a
// password prompt an agent started on a pty, types the secret, sees the
// command finish and detaches; then sends a line to the agent's other
// command, which reads a stdin pipe. The secret is never on the screen,
// nor anywhere in what acpterm wrote to the terminal, and the agent reads
// only what the command printed. The terminal's mode is as it was before
// (stty -g), and nothing is left running.
func TestAttachPasswordTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash runs the password prompt (read -s)")
	}
	dir := t.TempDir()
	state := t.TempDir()
	script := `stty -g > before; "$ACPTERM_BIN" run --no-color -- "$ACPTERM_AGENT"; echo $? > code; stty -g > after`
	env := []string{fakeAgentEnv + "=attach-pw", "XDG_STATE_HOME=" + state, "ACPTERM_BIN=" + acptermBin, "ACPTERM_AGENT=" + testExe(t)}
	p := startTmux(t, dir, env, "/bin/sh", "-c", script)
	const secret = "s3cr3t-v4lue"
	onScreen := func(want string) func([]string, string) bool {
		return func(screen []string, _ string) bool {
			return slices.ContainsFunc(screen, func(row string) bool { return strings.Contains(row, want) })
		}
	}
	keys := func(k ...string) { p.tmux(append([]string{"send-keys", "-t", "acpterm"}, k...)...) }
	atPrompt := func(s []string, _ string) bool { return s[len(s)-1] == "›" } // rows are cut of trailing blanks
	p.waitFor("the prompt line", 30*time.Second, atPrompt)
	keys("-l", "start")
	keys("Enter")
	p.waitFor("the question before the command runs", 30*time.Second, onScreen("allow? [y]es"))
	keys("-l", "a")
	p.waitFor("the agent's answer", 30*time.Second, onScreen("started both"))
	p.waitFor("the prompt line again", 30*time.Second, atPrompt)

	keys("-l", "/attach")
	keys("Enter")
	p.waitFor("the attached screen", 30*time.Second, onScreen("acpterm · Ctrl-] detaches, other keys go to the command · "))
	p.waitFor("the password prompt", 30*time.Second, onScreen("Password:"))
	p.waitFor("the header saying typing is hidden", 30*time.Second, onScreen("acpterm · Ctrl-] detaches, other keys go to the command · typing is hidden · attached to 1"))
	p.waitFor("the command's first line, its colour gone", 30*time.Second, func(screen []string, _ string) bool { return slices.Contains(screen, "coloured") })
	keys("-l", secret)
	keys("Enter")
	p.waitFor("the command's end", 30*time.Second, onScreen("got 12 characters"))
	p.waitFor("the exit in the header", 30*time.Second, onScreen("acpterm · exited (exit 0): any key detaches"))
	keys("-l", "q")
	p.waitFor("the detach", 30*time.Second, onScreen("detached from 1 (bash -c"))

	keys("-l", "/send hello there")
	keys("Enter")
	p.waitFor("the line sent", 30*time.Second, func(screen []string, _ string) bool {
		return slices.ContainsFunc(screen, func(row string) bool {
			return strings.HasPrefix(row, "sent 12 bytes to ") && strings.HasSuffix(row, ` (read line; echo "line: $line")`)
		})
	})
	keys("-l", "status")
	keys("Enter")
	p.waitFor("the agent's status", 30*time.Second, onScreen(`line ended: exit 0: "line: hello there\n"`))
	p.waitFor("the agent's status", 30*time.Second, onScreen(`password ended: exit 0: "coloured\nPassword:\ngot 12 characters\n"`))
	keys("C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("the shell around acpterm exited %d", code)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if code := read("code"); code != "0" {
		t.Errorf("acpterm exited %s, want 0; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
	}
	if before, after := read("before"), read("after"); before != after {
		t.Errorf("the terminal's mode was not restored:\nbefore %s\nafter  %s", before, after)
	}
	if strings.Contains(p.raw(), secret) || strings.Contains(strings.Join(p.screen(), "\n"), secret) {
		t.Errorf("the secret reached the screen:\n%q", tail(p.raw(), 4000))
	}
	if raw := p.raw(); strings.Contains(raw, "\x1b]2;pwned") || strings.Contains(raw, "\x1b[31m") {
		t.Errorf("the command's own sequences reached the terminal:\n%q", tail(raw, 4000))
	}
}

// TestAttachDuringTurnTmux: the agent's turn waits on a password prompt
// (as it would on sudo); the person types /attach while the turn runs,
// answers the prompt, detaches, and the turn ends with what the command
// printed. A line typed during the turn that is no command is the next
// turn, as typed.
func TestAttachDuringTurnTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash runs the password prompt (read -s)")
	}
	dir := t.TempDir()
	script := `stty -g > before; "$ACPTERM_BIN" run --no-color -- "$ACPTERM_AGENT"; echo $? > code; stty -g > after`
	env := []string{fakeAgentEnv + "=attach-pw-turn", "XDG_STATE_HOME=" + t.TempDir(), "ACPTERM_BIN=" + acptermBin, "ACPTERM_AGENT=" + testExe(t)}
	p := startTmux(t, dir, env, "/bin/sh", "-c", script)
	const secret = "an0ther-s3cret"
	onScreen := func(want string) func([]string, string) bool {
		return func(screen []string, _ string) bool {
			return slices.ContainsFunc(screen, func(row string) bool { return strings.Contains(row, want) })
		}
	}
	keys := func(k ...string) { p.tmux(append([]string{"send-keys", "-t", "acpterm"}, k...)...) }
	atPrompt := func(s []string, _ string) bool { return s[len(s)-1] == "›" }
	p.waitFor("the prompt line", 30*time.Second, atPrompt)
	keys("-l", "start")
	keys("Enter")
	p.waitFor("the question before the command runs", 30*time.Second, onScreen("allow? [y]es"))
	keys("-l", "a")
	p.waitFor("the password prompt under the tool call", 30*time.Second, onScreen("│ Password:"))
	keys("-l", "hello")
	keys("Enter")
	keys("-l", "/attach")
	keys("Enter")
	p.waitFor("the attached screen", 30*time.Second, onScreen("acpterm · Ctrl-] detaches, other keys go to the command · typing is hidden · attached to 1"))
	keys("-l", secret)
	keys("Enter")
	p.waitFor("the exit in the header", 30*time.Second, onScreen("acpterm · exited (exit 0): any key detaches"))
	keys("Escape")
	p.waitFor("the turn's end", 30*time.Second, onScreen(`password ended: exit 0: "coloured\nPassword:\ngot 14 characters\n"`))
	// "hello", typed during the turn, is the next turn, as a shell runs
	// the lines typed while a command ran.
	p.waitFor("the line typed ahead", 30*time.Second, onScreen("› hello"))
	p.waitFor("the answer to it", 30*time.Second, onScreen("say start or status"))
	p.waitFor("the prompt line", 30*time.Second, atPrompt)
	keys("C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("the shell around acpterm exited %d", code)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if code := read("code"); code != "0" {
		t.Errorf("acpterm exited %s, want 0; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
	}
	if before, after := read("before"), read("after"); before != after {
		t.Errorf("the terminal's mode was not restored:\nbefore %s\nafter  %s", before, after)
	}
	if strings.Contains(p.raw(), secret) {
		t.Errorf("the secret reached the screen:\n%q", tail(p.raw(), 4000))
	}
}

func init() {
	registerHostile("attach-winch", func() int { return serveAgent(&winchAgent{}) })
}

// winchAgent starts, on "start", a pty command that prints its size at
// start and at each SIGWINCH, and ends the turn. (bash runs a trap at
// once only while the wait builtin waits.)
type winchAgent struct{ baseAgent }

func (a *winchAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	term, err := conn.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "bash",
		Args: []string{"-c", `echo "size $(stty size)"; trap 'echo "size $(stty size)"' WINCH; while :; do sleep 1000 & wait $!; kill $! 2>/dev/null; done`}},
		&acp.TerminalOptions{PTY: &acp.V2TerminalSize{}})
	if err != nil {
		return nil, err
	}
	call := acp.NewTerminalToolCall("call_winch", "sizes", term.ID)
	if err := conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: call}); err != nil {
		return nil, err
	}
	// The turn ends once the command has printed its first size: an agent
	// has no way but polling to learn of output.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := term.Output(ctx)
		if err != nil {
			return nil, err
		}
		if strings.Contains(out.Output, "size") {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, agentSay(ctx, conn, req.SessionID, "started")
}

// TestAttachFollowsResizeTmux: attached, the command gets the size of the
// user's terminal less the header row, and a resize of that terminal
// (SIGWINCH) reaches it; Ctrl-] detaches from a command that still runs,
// which gets its earlier size back.
func TestAttachFollowsResizeTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash runs the command")
	}
	dir := t.TempDir()
	script := `stty -g > before; "$ACPTERM_BIN" run --no-color --approve-all -- "$ACPTERM_AGENT"; echo $? > code; stty -g > after`
	env := []string{fakeAgentEnv + "=attach-winch", "XDG_STATE_HOME=" + t.TempDir(), "ACPTERM_BIN=" + acptermBin, "ACPTERM_AGENT=" + testExe(t)}
	p := startTmux(t, dir, env, "/bin/sh", "-c", script)
	onScreen := func(want string) func([]string, string) bool {
		return func(screen []string, _ string) bool {
			return slices.ContainsFunc(screen, func(row string) bool { return strings.Contains(row, want) })
		}
	}
	keys := func(k ...string) { p.tmux(append([]string{"send-keys", "-t", "acpterm"}, k...)...) }
	atPrompt := func(s []string, _ string) bool { return s[len(s)-1] == "›" }
	p.waitFor("the prompt line", 30*time.Second, atPrompt)
	keys("-l", "start")
	keys("Enter")
	p.waitFor("the agent's answer", 30*time.Second, onScreen("started"))
	p.waitFor("the prompt line again", 30*time.Second, atPrompt)
	keys("-l", "/attach")
	keys("Enter")
	// The command's screen: its first size, then the pane's less the
	// header row.
	p.waitFor("the size of the pane less the header", 30*time.Second, onScreen("size 39 120"))
	p.waitFor("the first size above it", 30*time.Second, onScreen("size 24 80"))
	p.tmux("resize-window", "-t", "acpterm", "-x", "100", "-y", "30")
	p.waitFor("the new size", 30*time.Second, onScreen("size 29 100"))
	keys("C-]")
	p.waitFor("the detach", 30*time.Second, onScreen("): it still runs"))
	p.waitFor("the prompt line after it", 30*time.Second, atPrompt)
	keys("-l", "/attach")
	keys("Enter")
	// Detached, it had its 80×24 back; attached again, the pane's size.
	p.waitFor("the earlier size given back, then the pane's", 30*time.Second, func(screen []string, raw string) bool {
		i := strings.LastIndex(raw, "size 24 80")
		return i > strings.Index(raw, "size 29 100") && slices.Contains(screen, "size 29 100")
	})
	keys("C-]")
	p.waitFor("the prompt line at the end", 30*time.Second, atPrompt)
	keys("C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("the shell around acpterm exited %d", code)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "before"))
	a, _ := os.ReadFile(filepath.Join(dir, "after"))
	if len(b) == 0 || string(a) != string(b) {
		t.Errorf("the terminal's mode was not restored:\nbefore %s\nafter  %s", b, a)
	}
}

// TestAttachEndsWithTheSessionTmux: SIGTERM to acpterm while attached
// ends the session; the terminal is given back as it was (the alternate
// screen left, stty -g the same) and nothing is left running.
func TestAttachEndsWithTheSessionTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash runs the command")
	}
	dir := t.TempDir()
	script := `stty -g > before; "$ACPTERM_BIN" run --no-color --approve-all -- "$ACPTERM_AGENT"; echo $? > code; stty -g > after`
	env := []string{fakeAgentEnv + "=attach-winch", "XDG_STATE_HOME=" + t.TempDir(), "ACPTERM_BIN=" + acptermBin, "ACPTERM_AGENT=" + testExe(t)}
	p := startTmux(t, dir, env, "/bin/sh", "-c", script)
	onScreen := func(want string) func([]string, string) bool {
		return func(screen []string, _ string) bool {
			return slices.ContainsFunc(screen, func(row string) bool { return strings.Contains(row, want) })
		}
	}
	keys := func(k ...string) { p.tmux(append([]string{"send-keys", "-t", "acpterm"}, k...)...) }
	atPrompt := func(s []string, _ string) bool { return s[len(s)-1] == "›" }
	p.waitFor("the prompt line", 30*time.Second, atPrompt)
	keys("-l", "start")
	keys("Enter")
	p.waitFor("the agent's answer", 30*time.Second, onScreen("started"))
	p.waitFor("the prompt line again", 30*time.Second, atPrompt)
	keys("-l", "/attach")
	keys("Enter")
	p.waitFor("the attached screen", 30*time.Second, onScreen("size 39 120"))
	pid := childOf(t, p.pid, filepath.Base(acptermBin))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("the shell around acpterm exited %d", code)
	}
	raw := p.raw()
	if on, off := strings.LastIndex(raw, "\x1b[?1049h"), strings.LastIndex(raw, "\x1b[?1049l"); on < 0 || off < on {
		t.Errorf("the alternate screen was not left:\n%q", tail(raw, 2000))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "before"))
	a, _ := os.ReadFile(filepath.Join(dir, "after"))
	if len(b) == 0 || string(a) != string(b) {
		t.Errorf("the terminal's mode was not restored:\nbefore %s\nafter  %s", b, a)
	}
	if c, _ := os.ReadFile(filepath.Join(dir, "code")); strings.TrimSpace(string(c)) != "130" {
		t.Errorf("acpterm exited %q, want 130 (the session was ended)", c)
	}
}
