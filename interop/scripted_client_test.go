package interop

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shellAgentOutputLimit is the outputByteLimit the built-in agent is told to
// ask for.
const shellAgentOutputLimit = 4096

// TestScriptedClientCLI: the SDK's client with scripted terminals against
// the built-in agent, as the built `acpterm agent` binary serves it.
func TestScriptedClientCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a scripted TypeScript client session, through the binary")
	}
	bin := requireAcpterm(t)
	ctx := testCtx(t, time.Minute)
	cwd := t.TempDir()
	out, err := run(t, nodeCmd(ctx, "scripted-client.mjs", cwd, "--",
		bin, "agent", "--keep-going", "--output-limit", strconv.Itoa(shellAgentOutputLimit)))
	if err != nil {
		t.Fatalf("scripted-client: %v", err)
	}
	checkShellAgent(t, readTranscript(t, out), cwd)
}

// checkShellAgent checks what the built-in agent sent to the scripted
// client: for every prompt line, terminal/create with an explicit sh -c
// argv, a tool call embedding the terminal, wait, output, a final update
// with the exit status in rawOutput and the terminal still embedded, and a
// release; and the cancellation of a hanging command.
func checkShellAgent(t *testing.T, tr transcript, cwd string) {
	sid := tr.step(t, "session_new").str("ok.sessionId")
	wantJSON(t, tr.step(t, "prompt_commands"), "ok.stopReason", "end_turn")
	wantJSON(t, tr.step(t, "prompt_cancel"), "ok.stopReason", "cancelled")
	wantCleanExit(t, tr.step(t, "agent_exit"))
	t.Run("wire", func(t *testing.T) { checkWire(t, tr.check) })

	var wire wireLog
	for i, w := range tr.wire {
		wire = append(wire, wireMsg{i, w.str("dir"), w.sub("msg")})
	}

	// Each line's final update: status, rawOutput, and the text that a
	// client without terminals shows (the output's tail, then the status).
	lines := []shellLine{
		{"echo interop", "completed", map[string]any{"exitCode": 0, "signal": nil, "truncated": false},
			"```\ninterop\n```\nexit 0"},
		{"exit 3", "failed", map[string]any{"exitCode": 3, "signal": nil, "truncated": false},
			"(no output)\nexit 3"},
		{"kill -TERM $$", "failed", map[string]any{"exitCode": nil, "signal": "SIGTERM", "truncated": false},
			"(no output)\nkilled by SIGTERM"},
		{"sleep 1000", "failed", map[string]any{"exitCode": nil, "signal": "SIGTERM", "truncated": false, "cancelled": true},
			"```\nsleeping\n```\ncancelled, killed by SIGTERM"},
	}
	t.Run("without terminals", func(t *testing.T) { checkShownWithoutTerminals(t, tr) })

	var creates []wireMsg
	for _, w := range wire {
		if w.dir == "in" && w.m.str("method") == "terminal/create" {
			creates = append(creates, w)
		}
	}
	if len(creates) != len(lines) {
		t.Fatalf("%d terminal/create requests, want %d (one per line run; \"echo never\" must not run)", len(creates), len(lines))
	}
	if !filepath.IsAbs(cwd) {
		t.Fatalf("test cwd %q not absolute", cwd)
	}
	for k, want := range lines {
		t.Run(want.line, func(t *testing.T) { wire.checkLine(t, creates[k], want, sid, cwd) })
	}
}

// shellLine is a prompt line the built-in agent runs, and its final update.
type shellLine struct {
	line   string
	status string
	raw    map[string]any
	text   string
}

// wireMsg is a message of a transcript's wire, with its index in it.
type wireMsg struct {
	i   int
	dir string
	m   obj
}

// wireLog is the wire as one ordered list.
type wireLog []wireMsg

// first finds the first message at or after from that match accepts.
func (wire wireLog) first(from int, match func(wireMsg) bool) (wireMsg, bool) {
	for _, w := range wire[from:] {
		if match(w) {
			return w, true
		}
	}
	return wireMsg{i: -1}, false
}

// request matches the agent's request method on terminal termID.
func request(method, termID string) func(wireMsg) bool {
	return func(w wireMsg) bool {
		return w.dir == "in" && w.m.str("method") == method && w.m.str("params.terminalId") == termID
	}
}

// checkLine checks the run of one line, from its terminal/create: the
// tool call embedding the terminal, wait, output, the final update and
// the release, in that order, and nothing on the terminal after it.
func (wire wireLog) checkLine(t *testing.T, create wireMsg, want shellLine, sid, cwd string) {
	wantJSON(t, create.m, "params", map[string]any{
		"sessionId": sid, "command": "sh", "args": []string{"-c", want.line},
		"cwd": cwd, "outputByteLimit": shellAgentOutputLimit,
	})
	resp, _ := wire.first(create.i, func(w wireMsg) bool { return w.dir == "out" && w.m.at("id") == create.m.at("id") })
	id := resp.m.str("result.terminalId")
	if id == "" {
		t.Fatalf("no terminal id for %s", create.m)
	}
	embed := []any{map[string]any{"type": "terminal", "terminalId": id}}

	call, ok := wire.first(create.i, func(w wireMsg) bool {
		return w.m.str("method") == "session/update" && w.m.str("params.update.sessionUpdate") == "tool_call" &&
			w.m.str("params.update.content.0.terminalId") == id
	})
	if !ok {
		t.Fatal("no tool_call embedding the terminal")
	}
	u := call.m.sub("params.update")
	wantJSON(t, u, "kind", "execute")
	wantJSON(t, u, "status", "in_progress")
	wantJSON(t, u, "title", want.line)
	wantJSON(t, u, "content", embed)
	wantJSON(t, u, "rawInput", map[string]any{"command": "sh", "args": []string{"-c", want.line}, "cwd": cwd})
	callID := u.str("toolCallId")

	wait, ok1 := wire.first(call.i, request("terminal/wait_for_exit", id))
	output, ok2 := wire.first(wait.i+1, request("terminal/output", id))
	final, ok3 := wire.first(output.i+1, func(w wireMsg) bool {
		return w.m.str("method") == "session/update" && w.m.str("params.update.toolCallId") == callID
	})
	release, ok4 := wire.first(final.i+1, request("terminal/release", id))
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("not in order create < tool_call < wait_for_exit < output < tool_call_update < release: %v %v %v %v", ok1, ok2, ok3, ok4)
	}
	u = final.m.sub("params.update")
	wantJSON(t, u, "sessionUpdate", "tool_call_update")
	wantJSON(t, u, "status", want.status)
	// The terminal first, for clients that render it; the text
	// after it, for those that do not.
	wantJSON(t, u, "content", append(embed, map[string]any{
		"type": "content", "content": map[string]any{"type": "text", "text": want.text},
	}))
	for k, v := range want.raw {
		wantJSON(t, u, "rawOutput."+k, v)
	}
	wantJSON(t, release.m, "params", map[string]any{"sessionId": sid, "terminalId": id})
	if later, ok := wire.first(release.i+1, func(w wireMsg) bool {
		return w.dir == "in" && strings.HasPrefix(w.m.str("method"), "terminal/") && w.m.str("params.terminalId") == id
	}); ok {
		t.Errorf("terminal used after release: %s", later.m)
	}
	if want.line == "sleep 1000" {
		wire.checkCancelled(t, id, wait, output)
	}
}

// checkCancelled checks the cancelled command: session/cancel made the
// agent withdraw its wait ($/cancel_request), kill, and wait again, all
// before it read the final output.
func (wire wireLog) checkCancelled(t *testing.T, id string, wait, output wireMsg) {
	cancel, ok := wire.first(wait.i, func(w wireMsg) bool {
		return w.dir == "in" && w.m.str("method") == "$/cancel_request"
	})
	if !ok {
		t.Fatal("no $/cancel_request for the pending wait_for_exit")
	}
	wantJSON(t, cancel.m, "params", map[string]any{"requestId": wait.m.at("id")})
	kill, ok := wire.first(cancel.i, request("terminal/kill", id))
	if !ok || kill.i > output.i {
		t.Error("no terminal/kill between the cancel and the final output")
	}
	if again, ok := wire.first(wait.i+1, request("terminal/wait_for_exit", id)); !ok || again.i > output.i {
		t.Error("no second wait_for_exit after the kill")
	}
}

// checkShownWithoutTerminals reads the updates as the SDK parsed them, the
// way a client that renders no terminal (acpx) shows them, from their text
// alone: each command's output and status in its finished tool call, and a
// closing message per turn that names every command's result.
func checkShownWithoutTerminals(t *testing.T, tr transcript) {
	var shown []string
	for _, u := range tr.updates {
		switch u.str("sessionUpdate") {
		case "agent_message_chunk":
			shown = append(shown, "message: "+u.str("content.text"))
		case "tool_call_update":
			content, _ := u.at("content").([]any)
			for _, c := range content {
				if c := obj(c.(map[string]any)); c.str("type") == "content" && c.str("content.type") == "text" {
					shown = append(shown, u.str("status")+": "+c.str("content.text"))
				}
			}
		}
	}
	want := []string{
		"completed: ```\ninterop\n```\nexit 0",
		"failed: (no output)\nexit 3",
		"failed: (no output)\nkilled by SIGTERM",
		"message: ok   echo interop: exit 0\nFAIL exit 3: exit 3\nFAIL kill -TERM $$: killed by SIGTERM\n3 of 3 commands ran, 2 failed.",
		"failed: ```\nsleeping\n```\ncancelled, killed by SIGTERM",
		"message: FAIL sleep 1000: cancelled, killed by SIGTERM\n1 of 2 commands ran, 1 failed, 1 not run.",
	}
	if got, w := strings.Join(shown, "\n--\n"), strings.Join(want, "\n--\n"); got != w {
		t.Errorf("shown without terminals:\n%s\nwant:\n%s", got, w)
	}
}
