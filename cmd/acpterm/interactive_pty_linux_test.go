//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
)

// TestInteractiveCancel: an interactive session over a terminal. Ctrl-C in
// the middle of a turn cancels it (session/cancel), the next line is a
// turn in the same session, and Ctrl-D ends the session with status 0.
func TestInteractiveCancel(t *testing.T) {
	t.Parallel()
	env, log := sessionEnv(t, "sess-chat", t.TempDir())
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "/help lists the commands")
		s.expect(t, "› ")
		s.send(t, tty, "slow\r", "working on it")
		// SIGINT: the terminal is in its normal mode during a turn
		s.send(t, tty, "\x03", "cancelling the turn", "turn cancelled", "› ")
		s.send(t, tty, "hello\r", "answer to: hello", "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	mustContain(t, "log", readLog(t, log), "new\nprompt:sess_chat:slow\ncancel:sess_chat\nprompt:sess_chat:hello\n")
}

// TestInteractiveCommands: /help, /mode and /model in a session, an agent
// slash command sent as a prompt, an unknown command, line editing with
// the history, Ctrl-C abandoning a line, and /exit.
func TestInteractiveCommands(t *testing.T) {
	t.Parallel()
	env, log := sessionEnv(t, "sess-chat", t.TempDir())
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "/help\r", "/mode [ID]", "/memory", "Manage memory", `/review FILES  Review changes\x1b[31m`, "› ")
		s.send(t, tty, "/mode\r", "mode: default\r\nchoices:", " default, yolo, plan")
		s.send(t, tty, "/mode turbo\r", "/mode turbo: the agent offers no such mode; it offers default, yolo, plan")
		s.send(t, tty, "/mode YOLO\r", "mode: yolo\r\n")
		s.send(t, tty, "/model grok code\r", "model: opencode/grok-code (Grok Code)")
		s.send(t, tty, "/model gpt-9\r", "no such value for model; it offers opencode/big-pickle, opencode/grok-code")
		s.send(t, tty, "/nope\r", "unknown command /nope; /help lists the commands")
		s.send(t, tty, "/memory show\r", "answer to: /memory show", "› ")
		// Up twice: the history brings back "/nope"… then "/memory show";
		// Ctrl-C abandons it, a new line replaces it.
		tty.WriteString("abandoned\x03")
		s.send(t, tty, "\x1b[A\r", "answer to: /memory show", "› ")
		tty.WriteString("/exit\r")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	got := readLog(t, log)
	mustContain(t, "log", got, "new\nset_mode:sess_chat:yolo\nset:sess_chat:model=opencode/grok-code\nprompt:sess_chat:/memory show\nprompt:sess_chat:/memory show\n")
	if strings.Contains(got, "abandoned") || strings.Contains(got, "nope") || strings.Contains(got, "turbo") {
		t.Fatalf("a line that was not a prompt reached the agent:\n%s", got)
	}
}

// TestInteractiveCtrlCQuits: Ctrl-C at an empty prompt line ends the
// session normally.
func TestInteractiveCtrlCQuits(t *testing.T) {
	t.Parallel()
	env, _ := sessionEnv(t, "sess-chat", t.TempDir())
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		tty.WriteString("\x03")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
}

// TestInteractiveElicitation: a form from the agent is asked field by
// field on the terminal; a wrong answer is asked again.
func TestInteractiveElicitation(t *testing.T) {
	t.Parallel()
	env, log := sessionEnv(t, "sess-chat", t.TempDir())
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "form\r", `Tell me about you\x1b[2J`, "Your name [name]", "> ")
		s.send(t, tty, "A\r", "the length must be at least 2")
		s.send(t, tty, "Ada\r", "age")
		s.send(t, tty, "200\r", "the number must be between 0 and 150")
		s.send(t, tty, "36\r", "Proceed? (yes/no)")
		s.send(t, tty, "y\r", "2) Green")
		s.send(t, tty, "2\r", "form accepted name=Ada age=36 ok=true color=green", "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	mustContain(t, "log", readLog(t, log), "form:accepted name=Ada age=36 ok=true color=green\n")
}
