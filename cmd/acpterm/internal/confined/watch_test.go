package confined

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// recordedUpdates reads a file of testdata: one session/update's
// params per line.
func recordedUpdates(t *testing.T, name string) []acp.SessionUpdate {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []acp.SessionUpdate
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var n acp.SessionNotification
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, n.Update)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// textCall is an execute tool call that ends with status and shows text.
func textCall(id, status, text string) []acp.SessionUpdate {
	st := acp.ToolCallStatus(status)
	return []acp.SessionUpdate{
		&acp.ToolCall{ToolCallID: acp.ToolCallID(id), Title: id, Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusInProgress},
		&acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(id), Status: &st,
			Content: []acp.ToolCallContent{&acp.Content{Content: &acp.TextContent{Text: text}}}},
	}
}

// TestConfinedVerdict: a turn is reported as stopped by the sandbox only
// when every execute tool call failed, each with an error that reads as
// the sandbox's. The recordings are real agents' (testdata/README).
func TestConfinedVerdict(t *testing.T) {
	// The sandbox of the recorded runs: HOME (…/001) is outside the
	// writable paths, the workspace (…/002) inside.
	box := &sandbox.Applied{Mode: sandbox.WorkspaceWrite,
		Writable: []string{"/tmp/TestScratchCodex4153455915/002", "/tmp/TestScratchCodex2140677491/002", "/work/ws", "/dev/null"},
		ReadOnly: []string{"/work/ws/.git"}}
	concat := func(us ...[]acp.SessionUpdate) []acp.SessionUpdate {
		var out []acp.SessionUpdate
		for _, u := range us {
			out = append(out, u...)
		}
		return out
	}
	tests := []struct {
		name     string
		updates  []acp.SessionUpdate
		agent    *sandbox.Applied // the agent's sandbox; nil: not confined
		want     bool
		evidence string // in the evidence line, when want
	}{
		{"codex, a write to HOME refused", recordedUpdates(t, "codex-touch-home.jsonl"), box, true, "Read-only file system"},
		{"codex, the same unconfined", recordedUpdates(t, "codex-touch-home.jsonl"), nil, false, ""},
		{"codex, a missing file (kind read)", recordedUpdates(t, "codex-ls-missing.jsonl"), box, false, ""},
		{"claude, a write to HOME refused", recordedUpdates(t, "claude-touch-home.jsonl"), box, true, "Read-only file system"},
		{"claude, blocked by its auto mode", recordedUpdates(t, "claude-automode.jsonl"), box, false, ""},
		{"codex, its own bubblewrap (the model's view)", textCall("c1", "failed", "Process exited with code 1\nOutput:\nbwrap: setting up uid map: Read-only file system\n"), box, true, "bwrap"},
		{"permission denied outside", textCall("c1", "failed", "sh: 1: cannot create /home/u/.bashrc: Permission denied"), box, true, "/home/u/.bashrc"},
		{"permission denied in .git", textCall("c1", "failed", "error: could not lock config file /work/ws/.git/config: Operation not permitted"), box, true, ".git/config"},
		{"permission denied inside", textCall("c1", "failed", "cat: /work/ws/secret: Permission denied"), box, false, ""},
		{"permission denied, no path", textCall("c1", "failed", "Permission denied"), box, false, ""},
		{"a test failure", textCall("c1", "failed", "--- FAIL: TestX (0.00s)\nFAIL"), box, false, ""},
		{"confinement text, but the command succeeded", textCall("c1", "completed", "mount: /: Read-only file system"), box, false, ""},
		{"one failed, one worked", concat(recordedUpdates(t, "codex-touch-home.jsonl"), textCall("c2", "completed", "ok")), box, false, ""},
		{"two refused", concat(recordedUpdates(t, "codex-touch-home.jsonl"), textCall("c2", "failed", "mkdir: cannot create directory '/opt/x': Read-only file system")), box, true, "Read-only file system"},
		{"still running at the turn's end", textCall("c1", "in_progress", "Read-only file system"), box, false, ""},
		{"no command at all", nil, box, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWatch()
			for _, u := range tt.updates {
				w.Update(u)
			}
			n, evidence, ok := w.verdict(tt.agent, nil)
			if ok != tt.want || tt.want && !strings.Contains(evidence, tt.evidence) {
				t.Errorf("verdict %v (%d calls, %q); want %v with %q", ok, n, evidence, tt.want, tt.evidence)
			}
		})
	}
}

// TestConfinedVerdictTerminals: a command run in one of acpterm's own
// terminals (an agent that asks the client to run its commands, as omp
// does) is judged on that terminal's output and exit, in the commands'
// sandbox, even when the agent is not confined.
func TestConfinedVerdictTerminals(t *testing.T) {
	cmds := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Writable: []string{"/work/ws"}}
	code := uint32(1)
	for _, tt := range []struct {
		name   string
		output string
		exit   *uint32
		want   bool
	}{
		{"refused", "sh: 1: cannot create /etc/x: Read-only file system\n", &code, true},
		{"its own failure", "make: *** [all] Error 2\n", &code, false},
		{"refusal text, exit 0", "Read-only file system\n", new(uint32), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWatch()
			w.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, TerminalID: "t1"})
			w.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: "t1", Data: []byte(tt.output)})
			w.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: "t1", Status: &terminal.ExitStatus{ExitCode: tt.exit}})
			w.Update(&acp.ToolCall{ToolCallID: "c1", Title: "run", Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusCompleted,
				Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "t1"}}})
			if _, _, ok := w.verdict(nil, cmds); ok != tt.want {
				t.Errorf("verdict %v, want %v", ok, tt.want)
			}
			// Without a sandbox for the commands, nothing is acpterm's doing.
			if _, _, ok := w.verdict(nil, nil); ok {
				t.Errorf("verdict true with no sandbox")
			}
		})
	}
}

// TestConfinedVerdictDisplayTerminals: a command the agent ran itself and
// reports as a display terminal (codex-acp 2.6 sends its output only in
// terminal_update, embedded by ID in the tool call) is judged on that
// output in the agent's sandbox; an unconfined agent's is not acpterm's
// doing, whatever the commands' sandbox.
func TestConfinedVerdictDisplayTerminals(t *testing.T) {
	agent := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Writable: []string{"/work/ws"}}
	cmds := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Writable: []string{"/work/ws"}}
	code := uint32(1)
	failed := acp.ToolCallStatusFailed
	w := NewWatch()
	w.Update(&acp.ToolCall{ToolCallID: "call_1", Title: "touch", Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusInProgress,
		Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "call_1"}}})
	w.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, TerminalID: "call_1", Info: &terminal.Info{TerminalID: "call_1", Display: true}})
	w.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: "call_1",
		Data: []byte("touch: cannot touch '/home/u/x': Read-only file system\n")})
	w.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: "call_1", Status: &terminal.ExitStatus{ExitCode: &code}})
	w.Update(&acp.ToolCallUpdate{ToolCallID: "call_1", Status: &failed})
	if _, evidence, ok := w.verdict(agent, cmds); !ok || !strings.Contains(evidence, "Read-only file system") {
		t.Errorf("confined agent: verdict %v (%q), want the refusal", ok, evidence)
	}
	if _, _, ok := w.verdict(nil, cmds); ok {
		t.Errorf("unconfined agent: verdict true for a command acpterm did not run")
	}
}

// TestExecWatchBounded: the calls and text a watch keeps are bounded,
// and past the bound of calls it gives no verdict rather than a wrong one.
func TestExecWatchBounded(t *testing.T) {
	w := NewWatch()
	box := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Writable: []string{"/work/ws"}}
	big := strings.Repeat("x", 3*maxWatchedText) + "\nRead-only file system\n"
	for _, u := range textCall("c0", "failed", big) {
		w.Update(u)
	}
	if got := len(w.calls["c0"].text.b); got > maxWatchedText {
		t.Errorf("a call keeps %d bytes, more than %d", got, maxWatchedText)
	}
	if _, _, ok := w.verdict(box, nil); !ok {
		t.Errorf("the newest text, which names the refusal, was not kept")
	}
	for i := range maxWatchedCalls + 1 {
		w.Update(&acp.ToolCall{ToolCallID: acp.ToolCallID(fmt.Sprintf("n%d", i)), Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusFailed})
	}
	if len(w.calls) > maxWatchedCalls {
		t.Errorf("%d calls kept, more than %d", len(w.calls), maxWatchedCalls)
	}
	if _, _, ok := w.verdict(box, nil); ok {
		t.Errorf("a verdict past the bound of calls")
	}
}

// TestFailure: the message names what widens the sandbox that refused
// the commands: the agent's own sandbox gets --mode, a confined agent
// --sandbox-agent=false, a secret Landlock hides --readable; and a watch
// without a verdict says nothing.
func TestFailure(t *testing.T) {
	box := &sandbox.Applied{Mode: sandbox.WorkspaceWrite, Writable: []string{"/work/ws"},
		HiddenByLandlock: true, Hidden: []string{"/home/u/.ssh"}}
	for _, tt := range []struct {
		name        string
		text        string
		agent, cmds *sandbox.Applied
		want, not   []string
	}{
		{"confined agent", "touch: cannot touch '/home/u/x': Read-only file system", box, nil,
			[]string{"the command the agent ran failed in acpterm's sandbox (touch: cannot touch '/home/u/x': Read-only file system).", "--writable PATH", "--sandbox-agent=false", "the agent's own state"},
			[]string{"--mode", "--readable"}},
		{"its own sandbox", "bwrap: setting up uid map: Permission denied", box, nil,
			[]string{"--mode", "--sandbox-agent=false"}, []string{"--writable"}},
		{"a hidden secret", "cat: /home/u/.ssh/id_ed25519: Permission denied", box, nil,
			[]string{"/home/u/.ssh/id_ed25519 is a secret the sandbox hides: --readable PATH re-allows one."}, nil},
		{"commands only", "sh: 1: cannot create /etc/x: Read-only file system", nil, box,
			[]string{"--writable PATH", "--sandbox off"}, []string{"--sandbox-agent=false", "the agent's own state"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWatch()
			for _, u := range textCall("c1", "failed", tt.text) {
				w.Update(u)
			}
			if tt.cmds != nil {
				// Only a terminal of acpterm's is judged in the
				// commands' sandbox.
				w.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, TerminalID: "t1"})
				w.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: "t1"})
				w.Update(&acp.ToolCallUpdate{ToolCallID: "c1", Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "t1"}}})
			}
			got := w.Failure(tt.agent, tt.cmds)
			for _, s := range tt.want {
				if !strings.Contains(got, s) {
					t.Errorf("message %q lacks %q", got, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(got, s) {
					t.Errorf("message %q has %q", got, s)
				}
			}
		})
	}
	var none *Watch
	if got := none.Failure(box, box); got != "" {
		t.Errorf("a nil watch says %q", got)
	}
	if got := NewWatch().Failure(box, box); got != "" {
		t.Errorf("a turn without commands says %q", got)
	}
}
