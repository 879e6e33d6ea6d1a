//go:build realagents && linux

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// TestRealAgentsMCPRemote: the MCP server that acpterm run --mcp offers,
// with --remote ssh://… to a real sshd: the agent runs here, confined,
// its scripted model calls the offered exec_command, and the command runs
// on the target, in the target's sandbox (a write outside the target's
// directory is refused), shown with where it ran under the agent's own
// tool call (as in TestRealAgentsMCP), its output back to the model.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsMCPRemote -v
func TestRealAgentsMCPRemote(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	s := needSSHD(t)
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if !slices.Contains(mcpAgents, a.name) ||
			only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			env, flags := useOfferedMCP(&a)
			dir := targetDir(t)
			flags = append(flags, remoteArgs(t, s, dir)...)
			if a.name == "opencode" {
				// The target shares this machine's files: the .opencode
				// its sandbox reserves in its directory, the session's,
				// is seen here, and opencode, confined to its own state
				// here, cannot write its .gitignore into it. A real
				// target's directory is not seen here; the target keeps
				// none reserved with --writable-config.
				flags = append(flags, "--writable-config")
			}
			// The target shares this machine's files: marker.txt
			// (targetDir) proves the command ran in the target's
			// directory, and the sandbox there must not let it write the
			// file outside.
			outside := filepath.Join(t.TempDir(), "written-on-the-target")
			marker := "mcpremote" + a.name
			a.command = fmt.Sprintf("touch %s 2>/dev/null; cat marker.txt; printf '%%s-%%s\\n' acpterm-real %s", outside, marker)
			run := runScripted(t, bin, a, flags, marker, "", env...)
			r := run.r
			t.Logf("exit %d after %v; tool called %v, ran %v\nstdout:\n%.4000s\nstderr:\n%.4000s",
				r.code, r.elapsed.Round(time.Millisecond), run.called, run.ran, r.stdout, r.stderr)
			if r.code != 0 || !run.ran {
				t.Fatalf("exit %d, the command's output back %v", r.code, run.ran)
			}
			if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the command wrote outside the target's directory (%s: %v)", outside, err)
			}
			if !strings.Contains(r.stdout, "only on the target") {
				t.Errorf("the command did not run in the target's directory")
			}
			// Under the agent's tool call (no block of its own).
			underCall := strings.Contains(r.stdout, "  $ "+run.m.Command+"\n") && !strings.Contains(r.stdout, "\n$ "+run.m.Command)
			if !underCall {
				t.Errorf("the command is not shown under the agent's tool call, once")
			}
			if !strings.Contains(r.stdout, "on ssh://"+sshtest.Host) {
				t.Errorf("the screen does not say the command ran on ssh://%s", sshtest.Host)
			}
		})
	}
}
