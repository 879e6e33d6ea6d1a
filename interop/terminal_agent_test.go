package interop

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// The TypeScript terminal agent (ts/terminal-agent.mjs) reports one JSON line
// per case; terminalCases says what each line must show. The agent sees the
// client's terminal runtime only through the wire, so this is the runtime as
// any agent written with the official SDK sees it.
var terminalCases = []struct {
	name  string
	check func(t *testing.T, o obj, env caseEnv)
}{
	{"create_returns_while_running", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "exitStatusWhileRunning", nil)
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "output", "got go\n")
	}},
	{"output_while_running", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "whileRunning.output", "partial\n")
		wantJSON(t, o, "whileRunning.truncated", false)
		wantJSON(t, o, "whileRunning.exitStatus", nil)
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "final.output", "partial\nrest\n")
		exitedWith(t, o, "final.exitStatus", 0)
	}},
	{"exit_code", func(t *testing.T, o obj, _ caseEnv) {
		exitedWith(t, o, "exit", 7)
		exitedWith(t, o, "exitStatus", 7)
		// One pipe for both streams keeps their order.
		wantJSON(t, o, "output", "to-stdout\nto-stderr\n")
		wantJSON(t, o, "truncated", false)
	}},
	{"shell_line", func(t *testing.T, o obj, _ caseEnv) {
		for _, k := range []string{"argsAbsent", "argsEmpty"} {
			exitedWith(t, o, k+".exit", 0)
			wantJSON(t, o, k+".output", "X2\n")
		}
	}},
	{"exec_argv", func(t *testing.T, o obj, _ caseEnv) {
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "output", "a b|$HOME|*|it's|")
	}},
	{"truncation", func(t *testing.T, o obj, _ caseEnv) {
		// 305 bytes, limit 10: the newest 10 start inside a euro sign,
		// so the tail is cut forward to the next one: 9 bytes.
		wantJSON(t, o, "limit10.output", "€€€")
		wantJSON(t, o, "limit10.bytes", 9)
		wantJSON(t, o, "limit10.truncated", true)
		wantJSON(t, o, "limitZero.output", "")
		wantJSON(t, o, "limitZero.truncated", true)
		wantJSON(t, o, "underLimit.output", "hi\n")
		wantJSON(t, o, "underLimit.truncated", false)
		wantJSON(t, o, "invalidUTF8.output", "a\uFFFDb")
	}},
	{"kill_sigterm", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "kill.ok", map[string]any{})
		wantJSON(t, o, "outputAfterKill", "ok")
		killedBy(t, o, "exit", "SIGTERM")
		killedBy(t, o, "exitStatus", "SIGTERM")
	}},
	{"kill_sigkill", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "armed", true)
		killedBy(t, o, "exit", "SIGKILL")
	}},
	{"release_invalidates", func(t *testing.T, o obj, _ caseEnv) {
		id := o.str("terminalId")
		wantJSON(t, o, "release.ok", map[string]any{})
		for _, k := range []string{"output", "waitForExit", "kill", "releaseAgain"} {
			wantError(t, o, k, -32602, id)
		}
	}},
	{"unknown_id", func(t *testing.T, o obj, _ caseEnv) {
		for _, k := range []string{"output", "waitForExit", "kill", "release"} {
			wantError(t, o, k, -32602, "term_unknown_interop")
		}
	}},
	{"other_session", func(t *testing.T, o obj, _ caseEnv) {
		wantError(t, o, "output", -32602, o.str("terminalId"))
	}},
	{"env", func(t *testing.T, o obj, _ caseEnv) {
		// The request's PAGER wins over the default; GIT_PAGER and
		// GIT_TERMINAL_PROMPT are the client's defaults.
		wantJSON(t, o, "output", "from ts ✓|more|cat|0")
		wantJSON(t, o, "nameWithEquals.code", -32602)
		wantJSON(t, o, "emptyName.code", -32602)
	}},
	{"cwd", func(t *testing.T, o obj, env caseEnv) {
		wantJSON(t, o, "explicit.output", o.str("scratch"))
		wantJSON(t, o, "absent.output", o.str("sessionCwd"))
		if env.sessionCwd != "" {
			real, _ := filepath.EvalSymlinks(env.sessionCwd)
			wantJSON(t, o, "sessionCwd", real)
		}
		wantError(t, o, "relative", -32602, "relative/dir")
	}},
	{"stdin_devnull", func(t *testing.T, o obj, _ caseEnv) {
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "output", "eof:0\n/dev/null\n")
	}},
	{"grandchild_pipe", func(t *testing.T, o obj, _ caseEnv) {
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "output", "parent-done\n")
		// The grandchild sleeps 30 s holding the pipe; the wait must
		// not last that long.
		if ms, _ := o.at("waitMs").(float64); ms > 10_000 {
			t.Errorf("wait_for_exit took %v ms: it waited for the grandchild", ms)
		}
	}},
	{"concurrent_waits", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "exitStatusDuringWaits", nil)
		for _, k := range []string{"results.0", "results.1", "results.2", "again"} {
			exitedWith(t, o, k, 3)
		}
	}},
	{"wait_cancelled", func(t *testing.T, o obj, _ caseEnv) {
		wantError(t, o, "cancelled", -32800)
		wantJSON(t, o, "exitStatusAfterCancel", nil)
		exitedWith(t, o, "exit", 0)
		wantJSON(t, o, "output", "after\n")
	}},
	{"ids_distinct", func(t *testing.T, o obj, _ caseEnv) {
		ids, _ := o.at("ids").([]any)
		seen := map[any]bool{}
		for _, id := range ids {
			if s, _ := id.(string); s == "" || seen[id] {
				t.Errorf("terminal ids not distinct and non-empty: %v", ids)
			}
			seen[id] = true
		}
		if len(ids) != 3 {
			t.Errorf("got %d ids, want 3", len(ids))
		}
	}},
	{"permission", func(t *testing.T, o obj, _ caseEnv) {
		wantJSON(t, o, "ok.outcome", map[string]any{"outcome": "selected", "optionId": "allow"})
	}},
	{"wire", func(t *testing.T, o obj, _ caseEnv) {
		if n, _ := o.at("checked").(float64); n < 50 {
			t.Errorf("only %v messages checked against the SDK schemas", n)
		}
		if p, _ := o.at("problems").([]any); len(p) > 0 {
			b, _ := json.MarshalIndent(p, "  ", "  ")
			t.Errorf("the SDK's schemas disagree with what the client sent:\n  %s", b)
		}
	}},
	{"binary_output_at_ceiling", func(t *testing.T, o obj, _ caseEnv) {
		if o.at("chars") == nil {
			t.Errorf("no output: %s", o)
		}
	}},
}

// caseEnv is what the checks may need to know about the run.
type caseEnv struct {
	sessionCwd string
	left       []string // cases the run left out ("-NAME" in the prompt)
}

// checkTerminalCases checks the agent's report, one subtest per case.
func checkTerminalCases(t *testing.T, report []obj, env caseEnv) map[string]obj {
	byCase := map[string]obj{}
	for _, o := range report {
		byCase[o.str("case")] = o
	}
	for _, c := range terminalCases {
		if slices.Contains(env.left, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			o, ok := byCase[c.name]
			switch {
			case !ok && c.name == "binary_output_at_ceiling":
				t.Fatalf("the agent reported nothing: its connection probably ended on a terminal/output response over the SDK's 32 MiB message limit (see the agent's stderr)")
			case !ok:
				t.Fatalf("the agent reported nothing for this case (it reported %q)", slices.Sorted(maps.Keys(byCase)))
			case o.at("failed") != nil:
				t.Fatalf("the case failed in the agent: %s", o)
			}
			t.Logf("observed: %s", o)
			c.check(t, o, env)
		})
	}
	return byCase
}

// reportLines turns the agent's message chunks into its report lines.
func reportLines(t *testing.T, chunks []string) []obj {
	return jsonLines(t, []byte(strings.Join(chunks, "")))
}

// TestTerminalAgentGoClient runs the terminal agent under a minimal Go
// client around terminal.Manager: the runtime and the acp package, without
// the CLI.
func TestTerminalAgentGoClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: every case of the TypeScript terminal agent")
	}
	requireNode(t)
	ctx := testCtx(t, 2*time.Minute)

	// A short kill grace: kill_sigkill waits it out, and it is the same
	// path at any length. The ceiling case, which moves 16 MiB through the
	// race detector, is left to TestTerminalAgentCLI, whose binary has the
	// same runtime with the defaults users get.
	mgr := terminal.NewManager(&terminal.Options{KillGrace: 200 * time.Millisecond})
	defer mgr.Close()
	host := &hostClient{Manager: mgr}
	const left = "binary_output_at_ceiling"
	cmd := nodeCmd(ctx, "terminal-agent.mjs")
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	conn, err := acp.StartAgent(cmd, host, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		if s := stderr.String(); s != "" {
			t.Logf("agent stderr:\n%s", s)
		}
	}()

	if _, err := conn.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "acpterm-interop-host", Version: "1"},
	}); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	sess, err := mgr.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: cwd, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := conn.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "all -" + left}}})
	t.Logf("prompt took %v", time.Since(start).Round(time.Millisecond))
	switch {
	case err != nil:
		t.Errorf("prompt: %v", err)
	case resp.StopReason != acp.StopReasonEndTurn:
		t.Errorf("stop reason %q, want end_turn", resp.StopReason)
	}
	checkTerminalCases(t, reportLines(t, host.chunks()), caseEnv{sessionCwd: cwd, left: []string{left}})
}

// TestTerminalAgentCLI runs the terminal agent under `acpterm run --format
// json --approve-all` and checks the agent's report and the CLI's own events.
func TestTerminalAgentCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: every case of the TypeScript terminal agent, through the binary")
	}
	bin := requireAcpterm(t)
	ctx := testCtx(t, 2*time.Minute)

	cwd := t.TempDir()
	// A short kill grace, as in TestTerminalAgentGoClient: kill_sigkill
	// waits it out.
	cmd := boundCmd(ctx, bin, "run", "--format", "json", "--approve-all", "--kill-grace", "200ms", "--cwd", cwd, "-p", "all", "--",
		nodeBin, script("terminal-agent.mjs"))
	out, err := run(t, cmd)
	if err != nil {
		t.Errorf("acpterm run: %v", err)
	}
	events := jsonLines(t, out)

	var chunks []string
	var stops []obj
	for _, e := range events {
		switch e.str("event") {
		case "session_update":
			if e.str("update.sessionUpdate") == "agent_message_chunk" {
				chunks = append(chunks, e.str("update.content.text"))
			}
		case "stop":
			stops = append(stops, e)
		}
	}
	if len(stops) != 1 || stops[0].str("stopReason") != "end_turn" {
		t.Errorf("stop events %v, want one with stopReason end_turn", stops)
	}
	byCase := checkTerminalCases(t, reportLines(t, chunks), caseEnv{sessionCwd: cwd})

	// The CLI shows the terminal that exit_code embedded in a tool call:
	// created, its output, its exit.
	t.Run("cli_events", func(t *testing.T) {
		id := byCase["exit_code"].str("terminalId")
		if id == "" {
			t.Fatal("no terminal id from exit_code")
		}
		var output strings.Builder
		var created, exited []obj
		for _, e := range events {
			if e.str("terminalId") != id {
				continue
			}
			switch e.str("event") {
			case "terminal_created":
				created = append(created, e)
			case "terminal_output":
				output.WriteString(e.str("data"))
			case "terminal_exit":
				exited = append(exited, e)
			}
		}
		if len(created) != 1 {
			t.Fatalf("terminal_created events for %s: %v, want 1", id, created)
		}
		if got := output.String(); got != "to-stdout\nto-stderr\n" {
			t.Errorf("terminal_output data for %s = %q", id, got)
		}
		if len(exited) != 1 {
			t.Fatalf("terminal_exit events for %s: %v, want 1", id, exited)
		}
		exitedWith(t, exited[0], "", 7)
		wantJSON(t, exited[0], "timedOut", false)
		wantJSON(t, created[0], "command", "sh")
		wantJSON(t, created[0], "args", []string{"-c", "echo to-stdout; echo to-stderr >&2; exit 7"})

		// The agent's own permission request, approved by the flag.
		var perms []obj
		for _, e := range events {
			if e.str("event") == "permission" && e.str("toolCallId") == "ts-permission" {
				perms = append(perms, e)
			}
		}
		if len(perms) != 1 || perms[0].str("decision") != "allow_once" || perms[0].str("optionId") != "allow" {
			t.Errorf("permission events for ts-permission: %v, want one allow_once with optionId allow", perms)
		}
	})
}

// hostClient is the smallest useful Go client: terminals from a
// terminal.Manager, permissions granted with the first allow option, and the
// agent's message chunks recorded.
type hostClient struct {
	*terminal.Manager

	mu   sync.Mutex
	text []string
}

func (c *hostClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce || o.Kind == acp.PermissionOptionKindAllowAlways {
			return &acp.RequestPermissionResponse{Outcome: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}, nil
		}
	}
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (c *hostClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if chunk, ok := n.Update.(*acp.AgentMessageChunk); ok {
		if text, ok := chunk.Content.(*acp.TextContent); ok {
			c.mu.Lock()
			c.text = append(c.text, text.Text)
			c.mu.Unlock()
		}
	}
	return nil
}

func (c *hostClient) chunks() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.text)
}
