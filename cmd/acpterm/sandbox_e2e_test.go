//go:build linux

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// The sandbox end to end: the real binary runs the built-in agent's
// commands (or a fake agent) under each --sandbox and --network setting.

// sandboxOutsideEnv names the directory outside the workspace that the
// self-writing agent tries to write in.
const sandboxOutsideEnv = "ACPTERM_E2E_OUTSIDE"

func init() {
	registerHostile("self-write", func() int { return serveAgent(&selfWriteAgent{}) })
}

// selfWriteAgent runs commands itself, not through the client: a child
// that writes in the session's cwd and one that writes outside it. It
// reports their output in one agent message.
type selfWriteAgent struct{ baseAgent }

func (a *selfWriteAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	// setsid: a descendant that leaves the agent's session and process
	// group is still inside its sandbox.
	line := `echo in > agent-inside && echo agent-inside ok; setsid sh -c 'echo out > "$` + sandboxOutsideEnv + `/agent-outside"' && echo agent-outside ok`
	out, _ := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: "self-write: " + string(out)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestSandboxWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flags   func(extra string) []string
		outside bool // the write outside the cwd succeeds
		extra   bool // the write in the --writable dir succeeds
		note    string
	}{
		{"default", func(string) []string { return nil }, false, false, "sandbox: workspace-write"},
		{"off", func(string) []string { return []string{"--sandbox", "off"} }, true, true, ""},
		{"writable", func(x string) []string { return []string{"--writable", x} }, false, true, "sandbox: workspace-write"},
		{"read-only", func(string) []string { return []string{"--sandbox", "read-only"} }, false, false, "sandbox: read-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, outside, extra := t.TempDir(), t.TempDir(), t.TempDir()
			prompt := "echo in > inside\necho out > " + outside + "/f\necho extra > " + extra + "/f"
			if tt.note != "" {
				prompt += "\necho tmp > \"$TMPDIR/t\"" // set by the sandbox
			}
			args := append(append([]string{"run", "--approve-all"}, tt.flags(extra)...), "-p", prompt, "--", plainAcpterm(t), "agent", "--keep-going")
			r := acpterm(t, opts{plain: true, dir: ws}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			inside := tt.name != "read-only"
			if got := exists(filepath.Join(ws, "inside")); got != inside {
				t.Errorf("wrote inside the cwd: %v, want %v", got, inside)
			}
			if got := exists(filepath.Join(outside, "f")); got != tt.outside {
				t.Errorf("wrote outside the cwd: %v, want %v", got, tt.outside)
			}
			if got := exists(filepath.Join(extra, "f")); got != tt.extra {
				t.Errorf("wrote in the --writable dir: %v, want %v", got, tt.extra)
			}
			if !tt.outside {
				mustContain(t, "stdout", r.stdout, "Read-only file system")
			}
			if tt.note != "" {
				// Every sandbox mode may write its TMPDIR.
				mustContain(t, "stdout", r.stdout, "✓ echo tmp > \"$TMPDIR/t\" [execute]\n", "  └ exit 0 · ", " · "+tt.note+"\n")
			} else if strings.Contains(r.stdout, "sandbox:") {
				t.Errorf("stdout mentions a sandbox:\n%s", r.stdout)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}
}

func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed for /dev/tcp")
	}
	// A listener on the host's loopback: connections wait in its backlog,
	// which is all a connect needs.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // after the parallel subtests
	_, port, _ := strings.Cut(ln.Addr().String(), ":")
	prompt := "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected'"
	for _, network := range []string{"allow", "deny"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			r := acpterm(t, opts{plain: true}, "run", "--format", "json", "--approve-all", "--network", network, "-p", prompt, "--", plainAcpterm(t), "agent", "--keep-going")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			evs := parseEvents(t, r.stdout)
			created := ofKind(evs, "terminal_created")
			if len(created) != 1 {
				t.Fatalf("%d terminal_created events:\n%s", len(created), r.stdout)
			}
			sb, _ := created[0]["sandbox"].(map[string]any)
			if sb["mode"] != "workspace-write" || sb["network"] != network {
				t.Errorf("terminal_created sandbox = %v", created[0]["sandbox"])
			}
			var out strings.Builder
			for _, e := range ofKind(evs, "terminal_output") {
				out.WriteString(e.str("data"))
			}
			if got := strings.Contains(out.String(), "connected"); got != (network == "allow") {
				t.Errorf("network %s: connected %v; output:\n%s", network, got, r.stdout)
			}
		})
	}
}

func TestSandboxAgent(t *testing.T) {
	t.Parallel()
	for _, confined := range []bool{false, true} {
		name := map[bool]string{false: "unconfined", true: "confined"}[confined]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws, outside := t.TempDir(), t.TempDir()
			args := []string{"run", "--approve-all", "-p", "go"}
			if confined {
				args = append(args, "--sandbox-agent")
			}
			args = append(args, "--", testExe(t))
			r := acpterm(t, opts{plain: true, dir: ws, env: []string{fakeAgentEnv + "=self-write", sandboxOutsideEnv + "=" + outside}}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stdout", r.stdout, "agent-inside ok")
			if !exists(filepath.Join(ws, "agent-inside")) {
				t.Error("the agent's child could not write in the workspace")
			}
			if got := exists(filepath.Join(outside, "agent-outside")); got == confined {
				t.Errorf("the agent's setsid grandchild wrote outside: %v; stdout:\n%s", got, r.stdout)
			}
			if confined {
				mustContain(t, "stdout", r.stdout, "Read-only file system")
			}
		})
	}
}

func TestSandboxUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", "--sandbox", "full", "-p", "x", "--", "true"}, "--sandbox must be off, read-only or workspace-write"},
		{[]string{"run", "--network", "none", "-p", "x", "--", "true"}, "--network must be allow or deny"},
		{[]string{"run", "--writable", "/nonexistent/acpterm-e2e", "-p", "x", "--", "true"}, "--writable"},
		{[]string{"demo", "--sandbox", "yes"}, "--sandbox must be off, read-only or workspace-write"},
		{[]string{"sandbox", "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		r := acpterm(t, opts{plain: true}, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("acpterm %q: exit %d, stderr:\n%s", tt.args, r.code, r.stderr)
		}
	}
	r := acpterm(t, opts{plain: true}, "sandbox")
	if r.code != 0 {
		t.Fatalf("acpterm sandbox: exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "acpterm sandbox", r.stdout, "landlock: ABI", "namespaces: ", "workspace-write, network deny: ")
	r = acpterm(t, opts{plain: true}, "help", "run")
	mustContain(t, "help run", r.stdout, "--sandbox MODE", "--network NET", "--writable PATH", "--sandbox-agent")
}
