package mcpexec_test

import (
	"strings"
	"testing"
)

// TestTTY: exec_command with tty runs the command on a pseudo-terminal:
// it is its terminal, a progress bar reads as its last state, and the
// model gets the rendered text, not the escape sequences.
func TestTTY(t *testing.T) {
	c := startServer(t, nil)
	r := c.tool("exec_command", map[string]any{"cmd": "tty; test -t 0 && test -t 1 && echo is-a-tty; printf '\\033[31mred\\033[0m a 10%%\\rb 50%%\\rc 100%%\\n'", "tty": true})
	out := output(r)
	if r.IsError || !strings.Contains(r.text(), "Process exited with code 0") || !strings.Contains(out, "/dev/pts/") ||
		!strings.Contains(out, "is-a-tty") || !strings.Contains(out, "c 100%") {
		t.Fatalf("answer %q", r.text())
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\r") || strings.Contains(out, "a 10%") {
		t.Errorf("the output is not the rendered screen: %q", out)
	}
}

// TestTTYSecretPrompt: a password prompt (echo off, as read -s or sudo
// turn it off; written with stty so that any POSIX shell runs it) on a
// pty is answered through write_stdin; the answer reaches the command,
// the next answer gives only the text after what the first one gave, and
// the secret, which the terminal does not echo, is nowhere in the output.
func TestTTYSecretPrompt(t *testing.T) {
	c := startServer(t, nil)
	r := c.tool("exec_command", map[string]any{"cmd": "printf 'Password: '; stty -echo; read p; stty echo; echo; echo \"got ${#p} characters\"", "tty": true, "yield_time_ms": 500})
	if !strings.Contains(output(r), "Password:") {
		t.Fatalf("first answer %q", r.text())
	}
	id := sessionOf(t, r)
	r = c.tool("write_stdin", map[string]any{"session_id": id, "chars": "hunter2\n", "yield_time_ms": 10000})
	out := output(r)
	if !strings.Contains(r.text(), "Process exited with code 0") || !strings.Contains(out, "got 7 characters") {
		t.Fatalf("second answer %q", r.text())
	}
	if strings.Contains(out, "Password:") {
		t.Errorf("the second answer repeats what the first gave: %q", out)
	}
	if strings.Contains(r.text(), "hunter2") {
		t.Errorf("the secret is in the output: %q", r.text())
	}
}
