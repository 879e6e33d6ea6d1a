package client

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
)

// TestDisplayCapabilities: acpterm asks for display terminals in the three
// dialects it renders: Zed's terminal_output, JetBrains'
// terminal_output_delta and the v2 draft's terminal_update. The agent is
// a shell that keeps the initialize request and exits.
func TestDisplayCapabilities(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs /bin/sh")
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "initialize.json")
	c := &Config{
		Agent:       []string{"/bin/sh", "-c", "head -n 1 > " + saved},
		Cwd:         dir,
		Prompt:      "hi",
		Format:      FormatJSON,
		InitTimeout: 10 * time.Second,
		Stdout:      &lockedBuffer{},
		Stderr:      &lockedBuffer{},
	}
	if code := Run(context.Background(), c); code == ExitOK {
		t.Fatal("a run whose agent exits at once succeeded")
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Params struct {
			ClientCapabilities struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"clientCapabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("initialize %q: %v", b, err)
	}
	for _, key := range []string{"terminal_output", "terminal_output_delta", "terminal_update"} {
		if v := string(req.Params.ClientCapabilities.Meta[key]); v != "true" {
			t.Errorf("clientCapabilities._meta.%s = %q, want true (%s)", key, v, b)
		}
	}
}

// TestDisplayAgentSandbox: a command the agent ran itself is shown as run
// by the agent, with the agent's sandbox when it is confined, in text and
// JSON; acpterm's own commands are not.
func TestDisplayAgentSandbox(t *testing.T) {
	wire := `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"ls","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"t"}],"_meta":{"terminal_info":{"terminal_id":"t"}}}}
{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"t","exit_code":0}}}}`
	applied := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork, LandlockABI: 7}
	for _, tc := range []struct {
		name       string
		sb         *sandbox.Applied
		text, json string
	}{
		{"unconfined", nil, "└ exit 0 · 100ms · run by the agent\n", `"display":true}`},
		{"confined", applied, "└ exit 0 · 100ms · run by the agent, sandbox: workspace-write, network denied\n",
			`"display":true,"sandbox":{"mode":"workspace-write","network":"deny"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				var out bytes.Buffer
				clock := newFakeClock()
				var r Renderer = NewTextRenderer(&out, &TextOptions{Now: clock.Now})
				want := tc.text
				if format == "json" {
					r, want = NewJSONRenderer(&out, clock.Now), tc.json
				}
				d := newDisplayTerminals(r)
				d.setAgentSandbox(func() *sandbox.Applied { return tc.sb })
				for i, line := range strings.Split(wire, "\n") {
					if i > 0 {
						clock.Advance(100 * time.Millisecond)
					}
					var n acp.SessionNotification
					if err := json.Unmarshal([]byte(line), &n); err != nil {
						t.Fatal(err)
					}
					d.SessionUpdate(&n, json.RawMessage(line))
				}
				r.Finish(acp.StopReasonEndTurn)
				if !strings.Contains(out.String(), want) {
					t.Errorf("%s:\n%s\nwant it to hold %q", format, out.String(), want)
				}
			}
		})
	}
}
