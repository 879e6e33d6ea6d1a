package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIExitStatus checks how `acpterm run` ends with an SDK agent: denied
// commands and permissions (--deny-all), a refusal (4), a crash (3) and
// Ctrl-C (session/cancel, 130).
func TestCLIExitStatus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the TypeScript agent through the binary")
	}
	bin := requireAcpterm(t)
	agent := []string{"--", nodeBin, script("terminal-agent.mjs")}
	acpterm := func(ctx context.Context, t *testing.T, flags ...string) *exec.Cmd {
		return boundCmd(ctx, bin, append(append([]string{"run", "--format", "json", "--cwd", t.TempDir()}, flags...), agent...)...)
	}
	stopReason := func(events []obj) string {
		for _, e := range events {
			if e.str("event") == "stop" {
				return e.str("stopReason")
			}
		}
		return ""
	}

	t.Run("deny_all", func(t *testing.T) {
		out, err := run(t, acpterm(testCtx(t, time.Minute), t, "--deny-all", "-p", "exit_code permission"))
		if err != nil {
			t.Errorf("acpterm run: %v", err)
		}
		var chunks []string
		for _, e := range jsonLines(t, out) {
			if e.str("event") == "session_update" && e.str("update.sessionUpdate") == "agent_message_chunk" {
				chunks = append(chunks, e.str("update.content.text"))
			}
		}
		byCase := map[string]obj{}
		for _, o := range reportLines(t, chunks) {
			byCase[o.str("case")] = o
		}
		// A denied terminal/create is -32003 (acp.CodePermissionDenied) for
		// the agent; a denied permission picks the reject option.
		wantJSON(t, byCase["exit_code"], "failed.code", -32003)
		wantJSON(t, byCase["permission"], "ok.outcome", map[string]any{"outcome": "selected", "optionId": "deny"})
	})

	t.Run("refusal", func(t *testing.T) {
		out, err := run(t, acpterm(testCtx(t, time.Minute), t, "-p", "refuse"))
		if code := exitCode(err); code != 4 {
			t.Errorf("exit status %d, want 4", code)
		}
		if r := stopReason(jsonLines(t, out)); r != "refusal" {
			t.Errorf("stop reason %q, want refusal", r)
		}
	})

	t.Run("crash", func(t *testing.T) {
		_, err := run(t, acpterm(testCtx(t, time.Minute), t, "-p", "crash"))
		if code := exitCode(err); code != 3 {
			t.Errorf("exit status %d, want 3", code)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		cmd := acpterm(testCtx(t, time.Minute), t, "-p", "hang")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Ctrl-C once the turn is under way: the agent said "hanging".
		var events []obj
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e obj
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			events = append(events, e)
			if e.str("update.content.text") == "hanging" {
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Error(err)
				}
			}
		}
		err = cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("stderr:\n%s", stderr.String())
		}
		if code := exitCode(err); code != 130 {
			t.Errorf("exit status %d (%v), want 130", code, err)
		}
		if r := stopReason(events); r != "cancelled" {
			t.Errorf("stop reason %q, want cancelled (events %v)", r, events)
		}
	})
}

// exitCode is a command's exit status: 0 for nil, -1 when it did not exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
