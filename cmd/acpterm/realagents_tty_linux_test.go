//go:build linux && realagents

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ttyCases are the agents whose available_commands_update comes after
// the prompt is drawn, and for omp, which runs its commands with
// terminal/create, the shapes of a command it runs differently from the
// line it asked about.
var ttyCases = []struct {
	agent, name string
	// cd is put before the server's command: "cd DIR && " (DIR the
	// workspace's sub), which omp runs as the rest of the line in DIR.
	cd bool
	// shell: $SHELL is a bash outside the system's directories, which
	// omp runs its lines with.
	shell bool
}{
	{agent: "claude", name: "claude"},
	{agent: "omp", name: "omp"},
	{agent: "omp", name: "omp-cd", cd: true},
	{agent: "omp", name: "omp-shell", shell: true},
}

// TestRealAgentsTTY runs `acpterm run NAME` for claude and omp at a
// terminal, as a person does, without --approve-all. It types the first
// word of a prompt as soon as the prompt is drawn, the rest after the
// agent's late list of commands is shown, a key at a time, and checks
// that the prompt and the typed text stay whole on one line; then it runs
// the turn, answering yes to the one question asked, and ends the session
// with Ctrl-D. One question per command: omp asks with
// session/request_permission and then runs the command with
// terminal/create, which must not be asked about again, also when it ran
// a leading "cd DIR &&" as its cwd or ran the line with the user's $SHELL.
//
// ACPTERM_REAL_AGENTS_WIRE=DIR runs the agent through the wire recorder
// (so not as a named agent: it is not confined as a whole) and keeps its
// wire in DIR/CASE.jsonl.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test ./cmd/acpterm -run TestRealAgentsTTY -v
func TestRealAgentsTTY(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	acp := screenBin(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, tc := range ttyCases {
		i := slices.IndexFunc(scriptedAgents, func(a scriptedAgent) bool { return a.name == tc.agent })
		a := scriptedAgents[i]
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			m := newModelServer(a.name + "-tty")
			defer m.Close()
			if tc.cd {
				sub := filepath.Join(ws, "sub")
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				m.Command = "cd " + sub + " && " + m.Command
			}
			env := scriptedHome(t, bin, a, m, nil)
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
			env = append(env, "NO_COLOR=1", "TERM=tmux-256color")
			if tc.shell {
				sh := filepath.Join(t.TempDir(), "bash")
				if err := os.Symlink("/bin/bash", sh); err != nil {
					t.Fatal(err)
				}
				env = append(env, "SHELL="+sh)
			}
			args := []string{"run", "--turn-timeout", "90s"}
			args = append(args, strings.Fields(os.Getenv(screenFlagsEnv))...)
			if dir := os.Getenv("ACPTERM_REAL_AGENTS_WIRE"); dir != "" {
				wire := filepath.Join(dir, tc.name+".jsonl")
				os.Remove(wire)
				env = append(env, fakeAgentEnv+"=wirelog", wireLogEnv+"="+wire)
				if os.Geteuid() == 0 {
					env = append(env, "IS_SANDBOX=1") // not confined, so not told by acpterm
				}
				cmd := agentCommand(t, acp, a.name)
				args = append(append(args, "--", testExe(t)), append(cmd, a.args...)...)
			} else {
				args = append(append(args, a.name), a.args...)
			}
			p := startTmux(t, ws, env, acp, args...)

			const prompt = "› "
			p.waitRaw(prompt, 60*time.Second)
			typed := p.typeSlowly(prompt, "", "Run ")
			p.waitRaw("commands:", 60*time.Second)
			raw := p.raw()
			if first, cmds := strings.Index(raw, prompt), strings.Index(raw, "commands:"); first > cmds {
				t.Logf("the agent's commands came before the prompt this time")
			}
			typed = p.typeSlowly(prompt, typed, "the command, then say what it printed.")
			checkPromptLine(t, p.screen(), prompt, typed)

			p.tmux("send-keys", "-t", "acpterm", "Enter")
			questions := 0
			p.waitFor("the reply", 90*time.Second, func(screen []string, raw string) bool {
				if n := strings.Count(raw, "allow? [y]es"); n > questions {
					questions = n
					p.tmux("send-keys", "-t", "acpterm", "-l", "y")
				}
				return strings.Contains(raw, m.Reply)
			})
			p.waitFor("the prompt after the turn", 30*time.Second, func(screen []string, _ string) bool {
				return len(screen) > 0 && screen[len(screen)-1] == strings.TrimSpace(prompt)
			})
			p.tmux("send-keys", "-t", "acpterm", "C-d")
			code := p.exited(30 * time.Second)
			raw = p.raw()
			t.Logf("exit %d; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if questions > 1 {
				t.Errorf("%d questions for one command, want one", questions)
			}
			if a.name == "omp" && questions != 1 {
				t.Errorf("omp: %d questions, want its own one", questions)
			}
			if !strings.Contains(raw, m.Output) {
				t.Errorf("the command's output %q is not shown", m.Output)
			}
			if called, ran := m.ToolCalled(); !ran {
				t.Errorf("the command did not run (the model server sent the tool call: %v)", called)
			}
			for _, w := range shutdownWarnings {
				if strings.Contains(raw, w) {
					t.Errorf("a warning about the agent's shutdown (%q)", w)
				}
			}
		})
	}
}

// checkPromptLine checks that the screen has the prompt and the typed
// text whole on one line, and no piece of the text on another.
func checkPromptLine(t *testing.T, screen []string, prompt, typed string) {
	t.Helper()
	want := strings.TrimRight(prompt+typed, " ")
	if !slices.Contains(screen, want) {
		t.Fatalf("no line %q on the screen:\n%s", want, strings.Join(screen, "\n"))
	}
	for _, row := range screen {
		if row != want && strings.Contains(row, "say what it") {
			t.Errorf("a piece of the typed text on another line: %q", row)
		}
	}
}
