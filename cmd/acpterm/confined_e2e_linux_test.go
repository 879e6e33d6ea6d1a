package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// An agent that runs its commands itself, as codex and claude do, and
// offers modes as codex-acp 2.6 does: "agent", its default, and
// "agent-full-access", the one that turns codex's own sandbox off. Run as
// a program named codex-acp it gets codex's profile, whose confined mode
// acpterm switches it to when it confines it.

func init() { registerHostile("selfexec", func() int { return serveAgent(&selfExec{}) }) }

// selfExec runs each prompt as a shell line (sh -c PROMPT), itself,
// reports it as an execute tool call that completed or failed with the
// command's output, and replies with the session's mode.
type selfExec struct {
	baseAgent
	mu   sync.Mutex
	mode acp.SessionModeID
}

func (a *selfExec) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.mu.Lock()
	a.mode = "agent"
	a.mu.Unlock()
	return &acp.NewSessionResponse{SessionID: "sess_selfexec", Modes: &acp.SessionModeState{CurrentModeID: "agent",
		AvailableModes: []acp.SessionMode{{ID: "read-only", Name: "Read-only"}, {ID: "agent", Name: "Auto review"}, {ID: "agent-full-access", Name: "Full access"}}}}, nil
}

func (a *selfExec) SetSessionMode(ctx context.Context, req *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	a.mu.Lock()
	a.mode = req.ModeID
	a.mu.Unlock()
	return &acp.SetSessionModeResponse{}, nil
}

func (a *selfExec) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	var line string
	for _, b := range req.Prompt {
		if t, ok := b.(*acp.TextContent); ok {
			line += t.Text
		}
	}
	send := func(u acp.SessionUpdate) error {
		return conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u})
	}
	for i, cmdLine := range strings.Split(line, "\n") {
		id := acp.ToolCallID(fmt.Sprintf("call_%d", i))
		if err := send(&acp.ToolCall{ToolCallID: id, Title: cmdLine, Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusInProgress}); err != nil {
			return nil, err
		}
		out, err := exec.CommandContext(ctx, "/bin/sh", "-c", cmdLine).CombinedOutput()
		status := acp.ToolCallStatusCompleted
		if err != nil {
			status = acp.ToolCallStatusFailed
		}
		if err := send(&acp.ToolCallUpdate{ToolCallID: id, Status: &status,
			Content: []acp.ToolCallContent{&acp.Content{Content: &acp.TextContent{Text: string(out)}}}}); err != nil {
			return nil, err
		}
	}
	a.mu.Lock()
	mode := a.mode
	a.mu.Unlock()
	if err := send(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "done in mode " + string(mode) + "\n"}}); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// selfExecAsCodex is the test binary under codex-acp's name, in a
// directory of its own, and the environment of a run of it in a fresh
// home (XDG and cache variables cleared, so that they resolve in it).
func selfExecAsCodex(t *testing.T) (prog, home string, env []string) {
	t.Helper()
	bin := t.TempDir()
	prog = filepath.Join(bin, "codex-acp")
	if err := os.Symlink(testExe(t), prog); err != nil {
		t.Fatal(err)
	}
	home, _, env = linkHome(t)
	return prog, home, append(env, fakeAgentEnv+"=selfexec")
}

// TestConfinedAllCommandsFailed: when every command the confined agent
// ran failed because acpterm's sandbox refused it, the run says so and
// what widens the sandbox, and exits 6, not 0; a command that failed on
// its own, or the same command unconfined, is an ordinary turn.
func TestConfinedAllCommandsFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	t.Parallel()
	prog, home, env := selfExecAsCodex(t)
	outside := filepath.Join(home, "outside")
	write := "echo hi > " + outside

	r := acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", write, "--", prog)
	if r.code != 6 {
		t.Errorf("confined, a write outside: exit %d, want 6\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"failed in acpterm's sandbox", outside, "--writable PATH", "--sandbox-agent=false"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("the confined agent wrote %s", outside)
	}

	// --format json: the turn's stop, then an error event with the code.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "--format", "json", "-p", write, "--", prog)
	evs := parseEvents(t, r.stdout)
	if last := evs[len(evs)-1]; r.code != 6 || last.str("event") != "error" || last["exitCode"] != float64(6) {
		t.Errorf("json: exit %d, last event %v; want 6 and an error event with exitCode 6", r.code, last)
	}

	// Two commands, one of which works: the sandbox did not stop the turn.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", write+"\necho fine", "--", prog)
	if r.code != 0 {
		t.Errorf("one command refused, one fine: exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}

	// A command that fails on its own, confined.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", "ls /nonexistent-acpterm-dir", "--", prog)
	if r.code != 0 || strings.Contains(r.stderr, "acpterm's sandbox") {
		t.Errorf("a failure of the command's own: exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}

	// Unconfined, the write is the agent's to make.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "--sandbox-agent=false", "-p", write, "--", prog)
	if r.code != 0 {
		t.Errorf("unconfined: exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("unconfined, the agent did not write %s: %v", outside, err)
	}
}

// TestConfinedMode: codex's profile names the modes that turn its own
// sandbox off; confined, the session is switched to the one it offers
// before the prompt; unconfined, or with --mode, the agent's default or
// the user's choice stands; a mode it does not offer is a usage error
// that lists those it does.
func TestConfinedMode(t *testing.T) {
	t.Parallel()
	prog, _, env := selfExecAsCodex(t)
	for _, tt := range []struct {
		name  string
		flags []string
		mode  string
	}{
		{"confined", nil, "agent-full-access"},
		{"unconfined", []string{"--sandbox-agent=false"}, "agent"},
		{"confined, --mode", []string{"--mode", "read-only"}, "read-only"},
	} {
		args := append([]string{"run", "--approve-all", "-p", "true"}, tt.flags...)
		r := acpterm(t, opts{env: env, plain: true}, append(args, "--", prog)...)
		if r.code != 0 || !strings.Contains(r.stdout, "done in mode "+tt.mode+"\n") {
			t.Errorf("%s: exit %d, want 0 and mode %s\nstdout:\n%s\nstderr:\n%s", tt.name, r.code, tt.mode, r.stdout, r.stderr)
		}
	}
	r := acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", "true", "--mode", "danger", "--", prog)
	if r.code != 2 || !strings.Contains(r.stderr, `--mode danger: the agent offers no such mode; it offers read-only, agent, agent-full-access`) {
		t.Errorf("--mode danger: exit %d, want 2 and the modes offered\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(runAgents(t, env), "confined in mode agent-full-access or full-access") {
		t.Errorf("acpterm agents does not name codex's confined mode")
	}
}

// runAgents is the output of `acpterm agents` in env.
func runAgents(t *testing.T, env []string) string {
	t.Helper()
	r := acpterm(t, opts{env: env, plain: true}, "agents")
	if r.code != 0 {
		t.Fatalf("acpterm agents: exit %d\n%s", r.code, r.stderr)
	}
	return r.stdout
}

// TestNamedAgentPinnedRelease: an agents.json entry that replaces codex
// with npx and a release of its package (the maintained one, or the
// former @zed-industries one) starts that, with codex's profile: confined,
// and switched to its confined mode. A fake npx says what it was asked
// and runs the self-executing fake agent.
func TestNamedAgentPinnedRelease(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"@agentclientprotocol/codex-acp@2.5.0", "@zed-industries/codex-acp@0.16.0"} {
		_, _, env := selfExecAsCodex(t)
		bin, cfg := t.TempDir(), t.TempDir()
		script := "#!/bin/sh\necho \"npx-args=$*\" >&2\nexec " + testExe(t) + "\n"
		if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(cfg, "acpterm"), 0o700); err != nil {
			t.Fatal(err)
		}
		entry := `{"codex": {"command": ["npx", "-y", "` + pkg + `"]}}`
		if err := os.WriteFile(filepath.Join(cfg, "acpterm", "agents.json"), []byte(entry), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "XDG_CONFIG_HOME="+cfg, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		r := acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", "true", "codex")
		if r.code != 0 || !strings.Contains(r.stderr, "npx-args=-y "+pkg) || !strings.Contains(r.stderr, "sandbox: agent and its commands") ||
			!strings.Contains(r.stdout, "done in mode agent-full-access\n") {
			t.Errorf("%s: exit %d; want 0, npx asked for it, the agent confined and in mode agent-full-access\nstdout:\n%s\nstderr:\n%s", pkg, r.code, r.stdout, r.stderr)
		}
	}
}

// TestInteractiveConfinedFailure: in an interactive session, a turn whose
// commands all failed in the sandbox is said so at its end, and the
// session goes on (it ends with status 0).
func TestInteractiveConfinedFailure(t *testing.T) {
	t.Parallel()
	prog, home, env := selfExecAsCodex(t)
	out, code := runPTY(t, env, func(s *ptyScreen, tty *os.File) {
		s.expect(t, "› ")
		s.send(t, tty, "echo hi > "+filepath.Join(home, "outside")+"\r", "failed in acpterm's sandbox", "› ")
		s.send(t, tty, "echo fine\r", "done in mode agent-full-access", "› ")
		tty.WriteString("\x04")
	}, "run", "--no-color", "--approve-all", "--", prog)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%q", code, out)
	}
	if n := strings.Count(out, "failed in acpterm's sandbox"); n != 1 {
		t.Errorf("the sandbox's refusal said %d times, want once (for the first turn only):\n%q", n, out)
	}
}
