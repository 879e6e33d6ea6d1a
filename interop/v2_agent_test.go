package interop

import (
	"os"
	"slices"
	"testing"
	"time"
)

// TestTSClientGoAgentV2: the official SDK's v2 client (experimental/v2)
// against the Go SDK's agent over v2: the agent of TestTSClientGoAgent,
// unchanged, served in v2 by AgentConn.
func TestTSClientGoAgentV2(t *testing.T) {
	t.Parallel()
	requireNode(t)
	ctx := testCtx(t, time.Minute)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	cmd := nodeCmd(ctx, "v2-client.mjs", cwd, "--", exe)
	cmd.Env = append(os.Environ(), roleEnv+"=go-agent")
	out, err := run(t, cmd)
	if err != nil {
		t.Fatalf("v2-client: %v\n%s", err, out)
	}
	tr := readTranscript(t, out)
	keepTranscript(t, "v2", tr, cwd)

	s := tr.step(t, "initialize")
	wantJSON(t, s, "ok.protocolVersion", 2)
	wantJSON(t, s, "ok.info.name", "acpterm-interop-go-agent")
	wantJSON(t, s, "ok.capabilities.session.prompt.embeddedContext", map[string]any{})

	t.Run("hello", func(t *testing.T) {
		s := tr.step(t, "prompt_hello")
		if s.str("ok.ack.messageId") == "" {
			t.Error("the prompt was not acknowledged with a message id")
		}
		wantJSON(t, s, "ok.stopReason", "end_turn")
		kinds := stringsAt(s, "ok.kinds")
		// running first; the permission request shows as requires_action,
		// then running again; v1's tool_call is an upsert in v2, its plan
		// a plan_update.
		for _, k := range []string{"state_update:running", "state_update:requires_action", "agent_message_chunk", "tool_call_update", "usage_update", "available_commands_update", "session_info_update", "plan_update"} {
			if !slices.Contains(kinds, k) {
				t.Errorf("no %s in %q", k, kinds)
			}
		}
		if kinds[0] != "state_update:running" || slices.Contains(kinds, "plan") || slices.Contains(kinds, "tool_call") {
			t.Errorf("updates %q", kinds)
		}
		if len(tr.requests) != 1 || tr.requests[0].str("params.title") != "Edit the notes" || tr.requests[0].str("params.subject.type") != "tool_call" {
			t.Errorf("permission requests %v", tr.requests)
		}
	})

	t.Run("background", func(t *testing.T) {
		s := tr.step(t, "prompt_background")
		wantJSON(t, s, "ok.turn.stopReason", "end_turn")
		wantJSON(t, s, "ok.term", "go-term-1")
		wantJSON(t, s, "ok.cancellable", true)
		wantJSON(t, s, "ok.cancel", map[string]any{})
		wantJSON(t, s, "ok.after.kinds", []string{"terminal_update"})
		wantJSON(t, s, "ok.after.background", []any{})
		wantJSON(t, s, "ok.canCancelAfter", false)
	})

	t.Run("session_cancel", func(t *testing.T) {
		wantJSON(t, tr.step(t, "prompt_session_cancel"), "ok.stopReason", "cancelled")
	})
	t.Run("baseline", func(t *testing.T) {
		wantJSON(t, tr.step(t, "session_list"), "ok.sessions", []any{})
		wantJSON(t, tr.step(t, "session_close"), "ok", map[string]any{})
	})
	wantCleanExit(t, tr.step(t, "agent_exit"))
	checkWire(t, tr.check)
}

// stringsAt returns the strings of the array at path.
func stringsAt(o obj, path string) []string {
	var out []string
	arr, _ := o.at(path).([]any)
	for _, v := range arr {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}
