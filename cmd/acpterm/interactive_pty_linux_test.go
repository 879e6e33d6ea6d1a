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
		tty.WriteString("slow\r")
		s.expect(t, "working on it")
		tty.WriteString("\x03") // SIGINT: the terminal is in its normal mode during a turn
		s.expect(t, "cancelling the turn")
		s.expect(t, "turn cancelled")
		s.expect(t, "› ")
		tty.WriteString("hello\r")
		s.expect(t, "answer to: hello")
		s.expect(t, "› ")
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
		tty.WriteString("/help\r")
		s.expect(t, "/mode [ID]")
		s.expect(t, "/memory")
		s.expect(t, "Manage memory")
		s.expect(t, `/review FILES  Review changes\x1b[31m`)
		s.expect(t, "› ")
		tty.WriteString("/mode\r")
		s.expect(t, "mode: default\r\nchoices:")
		s.expect(t, " default, yolo, plan")
		tty.WriteString("/mode turbo\r")
		s.expect(t, "/mode turbo: the agent offers no such mode; it offers default, yolo, plan")
		tty.WriteString("/mode YOLO\r")
		s.expect(t, "mode: yolo\r\n")
		tty.WriteString("/model grok code\r")
		s.expect(t, "model: opencode/grok-code (Grok Code)")
		tty.WriteString("/model gpt-9\r")
		s.expect(t, "no such value for model; it offers opencode/big-pickle, opencode/grok-code")
		tty.WriteString("/nope\r")
		s.expect(t, "unknown command /nope; /help lists the commands")
		tty.WriteString("/memory show\r")
		s.expect(t, "answer to: /memory show")
		s.expect(t, "› ")
		// Up twice: the history brings back "/nope"… then "/memory show";
		// Ctrl-C abandons it, a new line replaces it.
		tty.WriteString("abandoned\x03")
		tty.WriteString("\x1b[A\r")
		s.expect(t, "answer to: /memory show")
		s.expect(t, "› ")
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
		tty.WriteString("form\r")
		s.expect(t, `Tell me about you\x1b[2J`)
		s.expect(t, "Your name [name]")
		s.expect(t, "> ")
		tty.WriteString("A\r")
		s.expect(t, "the length must be at least 2")
		tty.WriteString("Ada\r")
		s.expect(t, "age")
		tty.WriteString("200\r")
		s.expect(t, "the number must be between 0 and 150")
		tty.WriteString("36\r")
		s.expect(t, "Proceed? (yes/no)")
		tty.WriteString("y\r")
		s.expect(t, "2) Green")
		tty.WriteString("2\r")
		s.expect(t, "form accepted name=Ada age=36 ok=true color=green")
		s.expect(t, "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	mustContain(t, "log", readLog(t, log), "form:accepted name=Ada age=36 ok=true color=green\n")
}
