package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/sshtest"
)

// With --remote, a named agent is confined as it is without: here, to its
// own state, when it runs here; by the exec server there, with its
// profile there, with --remote-agent.

func init() {
	registerHostile("write-marker", func() int { return serveAgent(&markerAgent{}) })
}

// markerEnv names the file the markerAgent tries to write.
const markerEnv = "ACPTERM_E2E_MARKER"

// markerAgent writes $ACPTERM_E2E_MARKER itself at the prompt, and says
// whether it could.
type markerAgent struct{ baseAgent }

func (a *markerAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	text := "marker written"
	if err := os.WriteFile(os.Getenv(markerEnv), []byte("unconfined\n"), 0o644); err != nil {
		text = "marker not written: " + err.Error()
	}
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: text},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// markerAgentProgram is a program named like claude's agent, so that it
// has claude's profile, that runs the markerAgent writing marker; ssh
// passes no environment, so the program sets it.
func markerAgentProgram(t *testing.T, marker string) string {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "claude-agent-acp")
	writeScript(t, prog, fmt.Sprintf("%s=write-marker %s=%s exec %s", fakeAgentEnv, markerEnv, marker, testExe(t)))
	return prog
}

// TestRemoteNamedAgentConfinedHere: with --remote, an agent with a profile
// runs here confined to its own state (it cannot write the marker), as
// it does without --remote, and the first line says so; only
// --sandbox-agent=false runs it unconfined.
func TestRemoteNamedAgentConfinedHere(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	marker := filepath.Join(t.TempDir(), "marker")
	prog := markerAgentProgram(t, marker)
	env := []string{"HOME=" + t.TempDir()}
	base := append([]string{"run", "--approve-all"}, remoteArgs(t, s, dir)...)
	r := acpterm(t, opts{plain: true, env: env}, append(base, "-p", "hi", "--", prog)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("with --remote, the agent ran here unconfined: it wrote the marker\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "marker not written")
	mustContain(t, "stderr", r.stderr, "sandbox: agent, here: its own state only")

	r = acpterm(t, opts{plain: true, env: env}, append(base, "--sandbox-agent=false", "-p", "hi", "--", prog)...)
	if r.code != 0 {
		t.Fatalf("--sandbox-agent=false: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("--sandbox-agent=false: the agent did not run unconfined: %v\nstdout:\n%s", err, r.stdout)
	}
}

// TestRemoteAgentConfinedThere: --remote-agent starts an agent with a
// profile on the target confined there, by the exec server, with its
// profile there (the target's HOME, set by the acpterm named with
// --remote-binary): it cannot write the marker, and writes its own state.
func TestRemoteAgentConfinedThere(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	marker := filepath.Join(t.TempDir(), "marker")
	prog := markerAgentProgram(t, marker)
	home := t.TempDir()
	// acpterm on the target, in an environment of the test's own.
	there := filepath.Join(t.TempDir(), "acpterm")
	writeScript(t, there, fmt.Sprintf(`HOME=%s XDG_STATE_HOME=%s/state exec %s "$@"`, home, home, plainAcpterm(t)))
	args := []string{"run", "--approve-all", "--remote-agent", "--remote", "ssh://" + sshtest.Host + dir,
		"--remote-tool-arg=-F" + s.Config, "--remote-binary", there, "-p", "hi", "--", prog}
	r := acpterm(t, opts{plain: true, env: []string{"HOME=" + t.TempDir()}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("--remote-agent ran the agent unconfined on the target: it wrote the marker\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "marker not written")
	mustContain(t, "stderr", r.stderr, "sandbox: agent, on the target: its own state only")
	// Its profile there was prepared: the state it may write, with its
	// own copy of Claude Code's global config.
	if _, err := os.Stat(filepath.Join(home, ".claude", ".claude.json")); err != nil {
		t.Errorf("the agent's state on the target: %v", err)
	}
	if strings.Contains(r.stderr, "exec-server: --agent takes no other flag") {
		t.Errorf("the exec server refused --sandbox-agent:\n%s", r.stderr)
	}
}
