package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// acpterm login runs the agent's terminal login on the user's terminal
// (here a pty): the fake login asks for a token there and saves it, and
// afterwards acpterm run gets a session. Each form of terminal method:
// the standard one (args and env appended to the agent's command line),
// qwen-code's _meta form and Zed's legacy _meta["terminal-auth"] command.
func TestAuthLoginPTY(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	for _, tt := range []struct {
		form, method, running, mode string
	}{
		{"standard", "tui-login", exe + " --login", "tui"},
		{"qwen", "openai", exe + " --auth-type=openai", ""},
		{"zed", "zed-login", exe + " --login", "zed"},
	} {
		t.Run(tt.form, func(t *testing.T) {
			t.Parallel()
			tok := filepath.Join(t.TempDir(), "token")
			env := authEnv(tt.form, fakeTokenFile+"="+tok)

			// Before: the run names the login command.
			r := acpterm(t, opts{plain: true, env: env}, "run", "--sandbox", "off", "-p", "hi", "--", exe)
			want := "acpterm login --method " + tt.method + " -- " + exe
			if r.code != 3 || !strings.Contains(r.stderr, want) {
				t.Fatalf("before login: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
			}

			out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
				s.expect(t, "acpterm: the agent's login command:\r\n  "+tt.running+"\r\n")
				s.expect(t, "Run it? [y/N] ")
				s.send(t, tty, "y\r", "acpterm: running "+tt.running, "Paste your token: ")
				s.send(t, tty, loginToken+"\r", "token saved")
			}, "login", "--", exe)
			if code != 0 || !strings.Contains(out, "acpterm: logged in: the agent opens sessions now") {
				t.Fatalf("login: exit %d:\n%q", code, out)
			}
			if b, err := os.ReadFile(tok); err != nil || string(b) != loginToken+" "+tt.mode {
				t.Fatalf("token file %q, %v; want the method's env FAKE_LOGIN_MODE=%q", b, err, tt.mode)
			}

			// After: the turn runs.
			r = acpterm(t, opts{plain: true, env: env}, "run", "--sandbox", "off", "-p", "hi", "--", exe)
			if r.code != 0 || !strings.Contains(r.stdout, "session ok (auth=token:"+tt.mode+", rejected=0)") {
				t.Fatalf("after login: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A login command that fails on the terminal (a wrong token) fails the
// login, and no session is claimed.
func TestAuthLoginPTYWrongToken(t *testing.T) {
	t.Parallel()
	tok := filepath.Join(t.TempDir(), "token")
	out, code := runPTY(t, authEnv("standard", fakeTokenFile+"="+tok), func(s *ptyScreen, tty *os.File) {
		s.expect(t, "Run it? [y/N] ")
		s.send(t, tty, "yes\r", "Paste your token: ")
		tty.WriteString("guess\r")
	}, "login", "--", testExe(t))
	if code != 3 || !strings.Contains(out, "acpterm: the login command failed (exit status 1)") || strings.Contains(out, "logged in") {
		t.Fatalf("exit %d:\n%q", code, out)
	}
}

// On a terminal, acpterm login asks before it runs the command the agent
// names, after showing it and every variable it sets; anything but yes
// leaves it unrun.
func TestAuthLoginPTYAsks(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"n", "", "yess"} {
		t.Run("answer "+answer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mark := filepath.Join(dir, "mark")
			env := authEnv("shell", fakeTokenFile+"="+filepath.Join(dir, "tok"), fakeMarkFile+"="+mark)
			out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
				s.expect(t, "acpterm: the agent's login command:\r\n  /bin/sh -c ")
				s.expect(t, "  (a program the agent names, not the agent's own command line)\r\n")
				s.expect(t, "  with FAKE_MARK="+mark+"\r\n")
				s.expect(t, "Run it? [y/N] ")
				tty.WriteString(answer + "\r")
			}, "login", "--", testExe(t))
			if code != 2 || !strings.Contains(out, "acpterm: the login command was not run: declined") {
				t.Fatalf("exit %d:\n%q", code, out)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("the login command ran although the answer was %q", answer)
			}
		})
	}
	t.Run("answer y", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mark := filepath.Join(dir, "mark")
		env := authEnv("shell", fakeTokenFile+"="+filepath.Join(dir, "tok"), fakeMarkFile+"="+mark)
		out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
			s.expect(t, "Run it? [y/N] ")
			tty.WriteString("Y\r")
		}, "login", "--", testExe(t))
		if code != 0 || !strings.Contains(out, "acpterm: logged in") {
			t.Fatalf("exit %d:\n%q", code, out)
		}
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("the login command did not run: %v", err)
		}
	})
}

// With no method to take by itself, acpterm run asks on the terminal,
// authenticates with the choice and runs the turn.
func TestAuthRunChooseOnTTY(t *testing.T) {
	t.Parallel()
	out, code := runPTY(t, authEnv("codex"), func(s *ptyScreen, tty *os.File) {
		s.expect(t, "The agent needs authentication. Methods it offers:\r\n  1) ")
		s.expect(t, "Login with ChatGPT [chatgpt]: Use your ChatGPT login")
		s.expect(t, "  3) Use OPENAI_API_KEY [openai-api-key]")
		s.expect(t, "method [1-3, Enter for none]: ")
		// not a choice: asked again
		s.send(t, tty, "7\r", "method [1-3, Enter for none]: ")
		tty.WriteString("1\r")
	}, "run", "--sandbox", "off", "--approve-all", "-p", "hi", "--", testExe(t))
	if code != 0 || !strings.Contains(out, "session ok (auth=chatgpt, rejected=1)") {
		t.Fatalf("exit %d:\n%q", code, out)
	}
}

// Enter chooses none: the run ends with the methods and next commands.
func TestAuthRunChooseNone(t *testing.T) {
	t.Parallel()
	out, code := runPTY(t, authEnv("codex"), func(s *ptyScreen, tty *os.File) {
		s.expect(t, "method [1-3, Enter for none]: ")
		tty.WriteString("\r")
	}, "run", "--sandbox", "off", "-p", "hi", "--", testExe(t))
	if code != 3 || !strings.Contains(out, "acpterm run --auth chatgpt [FLAGS] -- ") ||
		!strings.Contains(out, "acpterm: the agent needs authentication (Authentication required)") {
		t.Fatalf("exit %d:\n%q", code, out)
	}
}
