package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
)

// sessionEnv is the environment of a run with a session agent: its mode,
// the call log, and a state directory of the test's own.
func sessionEnv(t *testing.T, mode, state string) ([]string, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls.log")
	return []string{fakeAgentEnv + "=" + mode, sessionLogEnv + "=" + log, "XDG_STATE_HOME=" + state}, log
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestResumeLoad: a first run stores its session; a second with --resume
// continues it with session/load, shows the replayed history marked as
// such (the user's messages too, sanitized), then the new turn.
func TestResumeLoad(t *testing.T) {
	t.Parallel()
	state, dir := t.TempDir(), t.TempDir()
	env, log := sessionEnv(t, "sess-load", state)
	r := acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "-p", "first question\nmore", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	store := &sessionstore.Store{Path: filepath.Join(state, "acpterm", "sessions.json")}
	list, err := store.List()
	if err != nil || len(list) != 1 || list[0].SessionID != "sess_hist_1" || list[0].Title != "first question" || list[0].Cwd != dir {
		t.Fatalf("stored: %+v, %v", list, err)
	}

	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "--resume", "-p", "again", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "log", readLog(t, log), "new\nprompt:sess_hist_1:first question\nmore\nload:sess_hist_1:"+dir+"\nprompt:sess_hist_1:again\n")
	want := []string{
		"↺ the history of session sess_hist_1, replayed by the agent:\n",
		`› earlier question\x1b[2J` + "\n",
		"earlier answer\n",
		"read notes.txt",
		"› second question\n",
		"second answer\n",
		"↺ end of the history; the session goes on from here\n",
		"answer to: again\n",
	}
	mustContain(t, "stdout", r.stdout, want...)
	at := 0
	for _, w := range want {
		i := strings.Index(r.stdout[at:], w)
		if i < 0 {
			t.Fatalf("stdout out of order at %q:\n%s", w, r.stdout)
		}
		at += i + len(w)
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("an escape sequence reached stdout: %q", r.stdout)
	}

	// JSON: the replay is between two replay events.
	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--format", "json", "--session", "sess_hist_1", "-p", "third", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("json run: exit %d\n%s", r.code, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	var kinds []string
	for _, e := range evs {
		k := e.str("event")
		if k == "replay" {
			k += ":" + e.str("state")
		}
		kinds = append(kinds, k)
	}
	got := strings.Join(kinds, ",")
	if !strings.HasPrefix(got, "replay:start,session_update,session_update,session_update,session_update,session_update,replay:end,sandbox,session,") || !strings.HasSuffix(got, ",stop") {
		t.Fatalf("events %s", got)
	}

	// acpterm sessions lists it, by command line.
	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "sessions", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("sessions: exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "sessions", r.stdout, "sess_hist_1", "acpterm", "first question", dir)
}

// TestResumeResumeAndList: an agent without loadSession but with
// sessionCapabilities.resume gets session/resume (no replay); `acpterm
// sessions` merges the stored sessions with the agent's session/list.
func TestResumeResumeAndList(t *testing.T) {
	t.Parallel()
	state, dir := t.TempDir(), t.TempDir()
	env, log := sessionEnv(t, "sess-resume", state)
	if r := acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "-p", "hello", "--", testExe(t)); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	r := acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "--resume", "-p", "again", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "log", readLog(t, log), "resume:sess_res_1:"+dir+"\nprompt:sess_res_1:again\n")
	mustContain(t, "stdout", r.stdout, "↺ continuing session sess_res_1 (the agent does not replay its history)\n", "answer to: again")

	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "sessions", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("sessions: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "UPDATED") {
		t.Fatalf("sessions:\n%s", r.stdout)
	}
	mustContain(t, "sessions", lines[1], "sess_res_1", "both", "hello")
	mustContain(t, "sessions", lines[2], "sess_agent_only", "agent", "/elsewhere", "made in an editor")
	if strings.ContainsAny(r.stdout, "\x1b\x07") {
		t.Fatalf("agent text reached stdout unsanitized: %q", r.stdout)
	}
	// --no-agent: the store only.
	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "sessions", "--no-agent", "--", testExe(t))
	if strings.Contains(r.stdout, "sess_agent_only") || !strings.Contains(r.stdout, "sess_res_1") {
		t.Fatalf("sessions --no-agent:\n%s", r.stdout)
	}
}

// TestResumeErrors: an agent that can neither load nor resume, and a
// --resume with nothing stored, are usage errors (exit 2) that say why;
// a corrupt store is a warning, not a failure.
func TestResumeErrors(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env, _ := sessionEnv(t, "sess-bare", state)
	r := acpterm(t, opts{plain: true, env: env}, "run", "--session", "abc", "-p", "x", "--", testExe(t))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "the agent cannot continue a session: it advertises neither loadSession (session/load) nor sessionCapabilities.resume (session/resume)")

	r = acpterm(t, opts{plain: true, env: env}, "run", "--resume", "-p", "x", "--", testExe(t))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "--resume: no session of", "is stored (acpterm sessions lists them)")

	if err := os.MkdirAll(filepath.Join(state, "acpterm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "acpterm", "sessions.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = acpterm(t, opts{plain: true, env: env}, "run", "--no-color", "-p", "x", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d with a corrupt store\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "is unreadable", "started afresh")

	r = acpterm(t, opts{plain: true, env: env}, "run", "--resume", "--session", "a", "-p", "x", "--", testExe(t))
	if r.code != 2 || !strings.Contains(r.stderr, "--resume and --session exclude each other") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestElicitationDeclinedWithoutTTY: with no terminal to ask on, a form
// is declined.
func TestElicitationDeclinedWithoutTTY(t *testing.T) {
	t.Parallel()
	env, log := sessionEnv(t, "sess-chat", t.TempDir())
	r := acpterm(t, opts{plain: true, env: env}, "run", "--no-color", "-p", "form", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "log", readLog(t, log), "form:declined\n")
}
