package interop

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestTSClientLocalExec: the official SDK's client, which has no
// terminals, runs a prompt with `acpterm agent --exec auto`, which then
// runs the command itself. In the forms the client can ask for, the SDK
// accepts every update, and the completed tool call carries the output and
// exit status as text. (The v2 form is not among them: the SDK's v1 schema
// rejects a session update it does not know, such as terminal_update, which
// is why the agent sends it only to a client that opted in with
// _meta.terminal_update.)
func TestTSClientLocalExec(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: TestTSClientGoAgent is the -short interop check")
	}
	bin := requireAcpterm(t)
	for _, tc := range []struct {
		name, meta string
		live       func(u obj) bool // an update that carries live output
	}{
		{"text", "", nil},
		{"meta", `{"terminal_output":true}`, func(u obj) bool { return u.at("_meta.terminal_output.data") != nil }},
		{"v2_declined", `{"terminal_update":false}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			cmd := nodeCmd(ctx, "local-exec-client.mjs", t.TempDir(), "--", bin, "agent", "--exec", "auto")
			cmd.Env = append(os.Environ(), "CLIENT_META="+tc.meta)
			out, err := run(t, cmd)
			if err != nil {
				t.Fatalf("local-exec-client: %v\n%s", err, out)
			}
			tr := readTranscript(t, out)
			wantJSON(t, tr.step(t, "prompt"), "ok.stopReason", "end_turn")
			wantJSON(t, tr.step(t, "agent_exit"), "ok.code", 0)
			checkWire(t, tr.check)

			var final obj
			live := 0
			for _, u := range tr.updates {
				if u.str("sessionUpdate") == "tool_call_update" && u.str("status") == "completed" {
					final = u
				}
				if tc.live != nil && tc.live(u) {
					live++
				}
			}
			if final == nil {
				t.Fatalf("no completed tool call in %v", tr.updates)
			}
			content, _ := final.at("content").([]any)
			if len(content) == 0 {
				t.Fatalf("final update without content: %v", final)
			}
			text, _ := obj(content[len(content)-1].(map[string]any)).at("content.text").(string)
			if want := "```\nhello from local\nline two\n```\nexit 0"; text != want {
				t.Errorf("final text %q, want %q", text, want)
			}
			if tc.live != nil && live == 0 {
				t.Errorf("no live output in the %s form", tc.name)
			}
			if tc.live == nil && strings.Contains(string(out), `"terminalId"`) {
				t.Error("a terminal shown to a client that asked for none")
			}
		})
	}
}
