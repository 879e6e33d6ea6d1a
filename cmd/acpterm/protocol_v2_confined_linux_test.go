//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfinedAllCommandsFailedV2: over ACP v2 the agent's tool calls
// arrive as upserts (tool_call_update only); a turn whose every command
// failed in acpterm's sandbox still exits 6 and says so, in text and in
// --format json.
func TestConfinedAllCommandsFailedV2(t *testing.T) {
	t.Parallel()
	prog, home, env := selfExecAsCodex(t)
	outside := filepath.Join(home, "outside")
	write := "echo hi > " + outside
	r := acpterm(t, opts{env: env, plain: true}, "run", "--protocol", "2", "--approve-all", "-p", write, "--", prog)
	if r.code != 6 || !strings.Contains(r.stderr, "failed in acpterm's sandbox") {
		t.Errorf("v2, confined, a write outside: exit %d, want 6 and why\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = acpterm(t, opts{env: env, plain: true}, "run", "--protocol", "2", "--approve-all", "--format", "json", "-p", write, "--", prog)
	evs := parseEvents(t, r.stdout)
	if last := evs[len(evs)-1]; r.code != 6 || last.str("event") != "error" || last["exitCode"] != float64(6) {
		t.Errorf("v2, json: exit %d, last event %v; want 6 and an error event with exitCode 6", r.code, last)
	}
	r = acpterm(t, opts{env: env, plain: true}, "run", "--protocol", "2", "--approve-all", "-p", write+"\necho fine", "--", prog)
	if r.code != 0 {
		t.Errorf("v2, one command refused, one fine: exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}
}
