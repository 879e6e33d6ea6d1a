package main

import (
	"strings"
	"testing"
	"time"
)

// TestBackgroundAtExit: an agent starts `sleep 1000` in a terminal and
// ends its turn without releasing it. acpterm says on stderr that it
// still runs and that it is killed as acpterm exits, in JSON also as a
// still_running event before the stop; then it kills it, at once.
func TestBackgroundAtExit(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=background", bgMarkEnv + "=atexit"}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{env: env}, "run", "--format", "json", "--approve-all", "-p", "start", "--", testExe(t))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: 1 still running as acpterm exits:\n",
			"  1 terminal, ", ": sleep 1000 — killed now: acpterm's terminals end with it\n")
		evs := parseEvents(t, r.stdout)
		if len(evs) < 2 || evs[len(evs)-1].str("event") != "stop" || evs[len(evs)-2].str("event") != "still_running" {
			t.Fatalf("the last events are not still_running, stop: %v", evs)
		}
		ev := evs[len(evs)-2]
		items, _ := ev["items"].([]any)
		if len(items) != 1 || ev["more"] != 0.0 {
			t.Fatalf("still_running %v: want the terminal alone (its tool call is the same work)", ev)
		}
		it := event(items[0].(map[string]any))
		created := ofKind(evs, "terminal_created")
		if it.str("kind") != "terminal" || it.str("label") != "sleep 1000" || it["cancellable"] != true ||
			it.str("atExit") != "killed" || len(created) != 1 || it.str("id") != created[0].str("terminalId") {
			t.Fatalf("still_running item %v (terminals created %v)", it, created)
		}
		// It was killed (released) as acpterm exited, not left behind.
		if exits := ofKind(evs, "terminal_exit"); len(exits) != 1 || exits[0].str("signal") != "SIGTERM" {
			t.Fatalf("terminal_exit events %v, want the sleep killed by SIGTERM", exits)
		}
		assertGone(t, int(created[0]["pid"].(float64)))
		if r.elapsed > 20*time.Second {
			t.Fatalf("the run took %v", r.elapsed)
		}
	})
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{env: env}, "run", "--approve-all", "-p", "start", "--", testExe(t))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: 1 still running as acpterm exits:\n", ": sleep 1000 — killed now")
		mustContain(t, "stdout", r.stdout, "started sleep 1000")
		if strings.Contains(r.stdout, "still running as") {
			t.Fatalf("the list went to stdout:\n%s", r.stdout)
		}
	})
	// A turn that leaves nothing running says nothing of it.
	t.Run("nothing", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{env: env}, "run", "--format", "json", "-p", "hello", "--", testExe(t))
		if r.code != 0 || strings.Contains(r.stderr, "still running") || strings.Contains(r.stdout, "still_running") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})
}
