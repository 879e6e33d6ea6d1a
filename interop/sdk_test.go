package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// transcript is what ts/sdk-client.mjs printed, sorted by kind.
type transcript struct {
	wire     []obj // {"dir": "in"|"out", "msg": ...}
	updates  []obj // session/update payloads as the SDK parsed them
	requests []obj // agent requests as the SDK parsed them
	steps    map[string]obj
	check    obj
}

func readTranscript(t *testing.T, out []byte) transcript {
	tr := transcript{steps: map[string]obj{}}
	for _, o := range jsonLines(t, out) {
		switch o.str("kind") {
		case "wire":
			tr.wire = append(tr.wire, o)
		case "update":
			tr.updates = append(tr.updates, o.sub("update"))
		case "request":
			tr.requests = append(tr.requests, o)
		case "step":
			tr.steps[o.str("step")] = o
		case "wire-check":
			tr.check = o
		}
	}
	return tr
}

// step returns a step's outcome, failing the test if it is missing.
func (tr transcript) step(t *testing.T, name string) obj {
	t.Helper()
	s, ok := tr.steps[name]
	if !ok {
		t.Fatalf("the client printed no step %q", name)
	}
	t.Logf("step %s", s)
	return s
}

// received returns the wire messages the client received with method.
func (tr transcript) received(method string) []obj {
	var out []obj
	for _, w := range tr.wire {
		if w.str("dir") == "in" && w.str("msg.method") == method {
			out = append(out, w.sub("msg"))
		}
	}
	return out
}

// checkWire fails on any message the SDK's schemas would change.
func checkWire(t *testing.T, check obj) {
	t.Helper()
	if check == nil {
		t.Fatal("no wire-check line")
	}
	if p, _ := check.at("problems").([]any); len(p) > 0 {
		b, _ := json.MarshalIndent(p, "  ", "  ")
		t.Errorf("the SDK's schemas disagree with what the Go side sent:\n  %s", b)
	}
	t.Logf("%v messages checked against the SDK's schemas", check.at("checked"))
}

// TestTSClientGoAgent: the official SDK's client against the Go SDK's agent
// (AgentConn over stdio, in the re-executed test binary).
func TestTSClientGoAgent(t *testing.T) {
	t.Parallel()
	requireNode(t)
	ctx := testCtx(t, time.Minute)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	cmd := nodeCmd(ctx, "sdk-client.mjs", cwd, "--", exe)
	cmd.Env = append(os.Environ(), roleEnv+"=go-agent")
	out, err := run(t, cmd)
	if err != nil {
		t.Fatalf("sdk-client: %v\n%s", err, out)
	}
	tr := readTranscript(t, out)
	keepTranscript(t, "v1", tr, cwd)

	t.Run("initialize", func(t *testing.T) {
		s := tr.step(t, "initialize")
		wantJSON(t, s, "ok.protocolVersion", 1)
		wantJSON(t, s, "ok.agentInfo.name", "acpterm-interop-go-agent")
		wantJSON(t, s, "ok.agentCapabilities.promptCapabilities.embeddedContext", true)
		// The SDK numbers its requests from 0: the Go side must treat id 0
		// as an id, not as "absent".
		if len(tr.wire) < 2 {
			t.Fatal("no wire transcript")
		}
		wantJSON(t, tr.wire[0], "msg.id", 0)
		wantJSON(t, tr.wire[0], "msg.method", "initialize")
		for _, w := range tr.wire {
			if w.str("dir") == "in" && w.at("msg.id") == float64(0) {
				return
			}
		}
		t.Error("no response with id 0")
	})

	t.Run("session_new", func(t *testing.T) {
		if tr.step(t, "session_new").str("ok.sessionId") == "" {
			t.Error("no session id")
		}
	})

	t.Run("prompt_hello", func(t *testing.T) {
		wantJSON(t, tr.step(t, "prompt_hello"), "ok.stopReason", "end_turn")
		var kinds []string
		for _, u := range tr.updates {
			kinds = append(kinds, u.str("sessionUpdate"))
		}
		want := []string{
			"user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "agent_message_chunk",
			"plan", "available_commands_update", "session_info_update", "tool_call",
			"tool_call_update", "tool_call_update", "usage_update", "agent_message_chunk",
		}
		if len(kinds) < len(want) || !slices.Equal(kinds[:len(want)], want) {
			t.Errorf("updates the SDK accepted, in order:\n got %q\nwant %q (then the later turns')", kinds, want)
		}
		// Every session/update on the wire reached the handler, so the SDK
		// validated each one.
		if n := len(tr.received("session/update")); n != len(tr.updates) {
			t.Errorf("%d session/update messages on the wire, %d accepted by the SDK", n, len(tr.updates))
		}
		call := tr.updates[7]
		wantJSON(t, call, "content.1", map[string]any{"type": "diff", "path": filepath.Join(cwd, "out.txt"), "newText": "new"})
		wantJSON(t, call, "locations.0.line", 2)
		wantJSON(t, tr.updates[2], "messageId", "msg-1")
		wantJSON(t, tr.updates[len(want)-1], "content.text", `{"permission":"allow","read":"line two\nline three\n"}`)

		reqs := map[string][]obj{}
		for _, r := range tr.requests {
			reqs[r.str("method")] = append(reqs[r.str("method")], r.sub("params"))
		}
		if p := reqs["session/request_permission"]; len(p) == 0 {
			t.Error("no permission request")
		} else {
			wantJSON(t, p[0], "toolCall", map[string]any{"toolCallId": "edit-1", "title": "Edit the notes", "kind": "edit", "status": "pending"})
			wantJSON(t, p[0], "options.0.kind", "allow_once")
		}
		sid := tr.steps["session_new"].str("ok.sessionId")
		wantJSON(t, obj{"r": reqs["fs/read_text_file"]}, "r", []any{map[string]any{
			"sessionId": sid, "path": filepath.Join(cwd, "notes.txt"), "line": 2, "limit": 2,
		}})
		wantJSON(t, obj{"w": reqs["fs/write_text_file"]}, "w", []any{map[string]any{
			"sessionId": sid, "path": filepath.Join(cwd, "out.txt"), "content": "written by Go: line two\nline three\n",
		}})
	})

	t.Run("session_cancel", func(t *testing.T) {
		wantJSON(t, tr.step(t, "prompt_session_cancel"), "ok.stopReason", "cancelled")
	})

	t.Run("cancel_request_from_ts", func(t *testing.T) {
		s := tr.step(t, "prompt_cancel_request")
		wantError(t, s, "", -32800)
	})

	t.Run("cancel_request_from_go", func(t *testing.T) {
		s := tr.step(t, "prompt_permission_cancel")
		wantJSON(t, s, "ok.stopReason", "cancelled")
		// The client's permission handler saw its request cancelled.
		wantJSON(t, s, "ok.permissionAbort.code", -32800)
		// And on the wire: $/cancel_request names the permission request.
		var permID any
		for _, m := range tr.received("session/request_permission") {
			if m.str("params.toolCall.toolCallId") == "ask-then-cancel" {
				permID = m.at("id")
			}
		}
		cancels := tr.received("$/cancel_request")
		if permID == nil || len(cancels) != 1 {
			t.Fatalf("permission request id %v, $/cancel_request messages %v", permID, cancels)
		}
		wantJSON(t, cancels[0], "params", map[string]any{"requestId": permID})
	})

	t.Run("errors", func(t *testing.T) {
		wantError(t, tr.step(t, "unknown_method"), "", -32601, "_interop/unknown")
		wantError(t, tr.step(t, "invalid_params"), "", -32602)
		wantError(t, tr.step(t, "unknown_session"), "", -32002, "no-such-session")
	})

	t.Run("agent_exit", func(t *testing.T) {
		wantCleanExit(t, tr.step(t, "agent_exit"))
	})

	t.Run("wire", func(t *testing.T) { checkWire(t, tr.check) })
}
