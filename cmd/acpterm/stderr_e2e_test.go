package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent's stderr when acpterm's stderr is not a terminal: copied as it
// comes by default, as before (sanitized, unprefixed); --agent-stderr hide
// drops it, --agent-stderr FILE writes it there, sanitized.
func TestAgentStderrFlags(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=stderr", fakeStderrLines + "=5"}
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: env}, "run", "--sandbox", "off", "-p", "hi", "--", testExe(t))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		mustContain(t, "stderr", "\n"+r.stderr, "\nagent log line 1 \\x1b[2J\n", "\nagent log line 5 \\x1b[2J\n")
	})
	t.Run("hide", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: env}, "run", "--sandbox", "off", "--agent-stderr", "hide", "-p", "hi", "--", testExe(t))
		if r.code != 0 || strings.Contains(r.stderr, "agent log line") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "agent.log")
		r := acpterm(t, opts{plain: true, env: env}, "run", "--sandbox", "off", "--agent-stderr", file, "-p", "hi", "--", testExe(t))
		if r.code != 0 || strings.Contains(r.stderr, "agent log line") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		for _, i := range "12345" {
			want += "agent log line " + string(i) + " \\x1b[2J\n"
		}
		if string(b) != want {
			t.Fatalf("file holds %q, want %q", b, want)
		}
	})
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{plain: true, env: env}, "run", "--agent-stderr", "", "-p", "hi", "--", testExe(t))
		if r.code != 2 || !strings.Contains(r.stderr, "--agent-stderr wants show, hide or a file") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
}
