package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The agent's stderr on a terminal, by default: held while the turn runs,
// so that nothing of it lands between the tool call and the reply; then
// dimmed and prefixed with the agent's name, a count when there are more
// than 3 lines and the turn succeeded, the last 20 when it failed.
func TestAgentStderrOnTTY(t *testing.T) {
	t.Parallel()
	name := filepath.Base(testExe(t))
	line := func(i int) string { return fmt.Sprintf("%s: agent log line %d \\x1b[2J", name, i) }
	for _, tt := range []struct {
		name  string
		lines int
		fail  bool
		flags []string
		want  []string // in this order, after the reply when it succeeds
		not   []string
		also  []string // anywhere
	}{
		{"quiet", 2, false, nil, []string{stderrReply, line(1), line(2)}, nil, nil},
		// The count is of the lines read by the turn's end: stderr is a
		// pipe of its own, so under load the last may come after it.
		{"noisy", 8, false, nil, []string{stderrReply, name + " wrote ", " lines on stderr (not shown; --agent-stderr show shows them)"},
			[]string{"agent log line"}, nil},
		{"failed", 30, true, nil, []string{name + " wrote 30 lines on stderr; the last 20:", line(11), line(30),
			"acpterm: the agent exited during the turn (exit status 4)"}, []string{line(10) + "\r"}, nil},
		// Copied as they come: the agent's stderr and its messages travel
		// on two pipes, so the reply may come before or after them.
		{"show", 8, false, []string{"--agent-stderr", "show"}, []string{line(1), line(8)}, []string{"wrote 8 lines"}, []string{stderrReply}},
		{"hide", 8, false, []string{"--agent-stderr", "hide"}, []string{stderrReply}, []string{"agent log line", "wrote 8 lines"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := []string{fakeAgentEnv + "=stderr", fmt.Sprintf("%s=%d", fakeStderrLines, tt.lines)}
			if tt.fail {
				env = append(env, fakeStderrFail+"=1")
			}
			args := append(append([]string{"run", "--sandbox", "off"}, tt.flags...), "-p", "hi", "--", testExe(t))
			out, code := runPTY(t, env, nil, args...)
			if want := map[bool]int{false: 0, true: 3}[tt.fail]; code != want {
				t.Fatalf("exit %d, want %d:\n%s", code, want, out)
			}
			plain := sgr.ReplaceAllString(out, "")
			at := 0
			for _, w := range tt.want {
				i := strings.Index(plain[at:], w)
				if i < 0 {
					t.Fatalf("no %q after byte %d in:\n%s", w, at, plain)
				}
				at += i + len(w)
			}
			for _, a := range tt.also {
				if !strings.Contains(plain, a) {
					t.Fatalf("no %q in:\n%s", a, plain)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(plain, n) {
					t.Fatalf("%q shown:\n%s", n, plain)
				}
			}
			if strings.Contains(out, "\x1b[2J") {
				t.Fatalf("the agent's escape sequence reached the terminal:\n%q", out)
			}
			if tt.flags == nil && tt.lines > 0 && !strings.Contains(out, "\x1b[2m"+name+": ") && !strings.Contains(out, "\x1b[2m"+name+" wrote") {
				t.Fatalf("the agent's stderr is not dimmed:\n%q", out)
			}
		})
	}
}
