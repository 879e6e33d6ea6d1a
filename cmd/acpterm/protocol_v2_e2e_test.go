package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// durations matches the timings a screen shows (0ms, 1.2s, 3m05s), and
// ids the random IDs of sessions, terminals and tool calls.
var (
	durations = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m\d+s)\b`)
	randomIDs = regexp.MustCompile(`\b(sess|term|call)_[0-9a-f]{8,}\b`)
)

// normalScreen is a run's stdout without what differs from run to run.
func normalScreen(s string) string {
	return randomIDs.ReplaceAllString(durations.ReplaceAllString(s, "T"), "$1_ID")
}

// TestProtocolV2SameScreen: the built-in agent (acpterm agent, on the acp
// SDK, which serves whichever version it is asked for) running its
// commands itself, once over ACP v1 and once over v2: the same screen
// (timings and random IDs aside), the same exit status, and --format json
// events of the same kinds and members in the same order. The wire of the
// v2 run (recorded between the two) shows version 2 agreed, session/prompt
// acknowledged rather than answered with a stop reason, and the turn
// ended by an idle state_update.
func TestProtocolV2SameScreen(t *testing.T) {
	t.Parallel()
	prompt := "echo hello\nprintf 'a\\nb\\n'\nfalse\necho after"
	run := func(protocol, format, wire string) result {
		args := []string{"run", "--no-color", "--approve-all", "--sandbox", "off", "--protocol", protocol, "--format", format, "-p", prompt, "--"}
		var env []string
		if wire != "" {
			env = []string{fakeAgentEnv + "=wirelog", wireLogEnv + "=" + wire}
			args = append(args, testExe(t))
		}
		args = append(args, acptermBin, "agent", "--exec", "local", "--sandbox", "off", "--keep-going")
		return acpterm(t, opts{plain: true, env: env}, args...)
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			wire := filepath.Join(t.TempDir(), "wire.jsonl")
			v1, v2 := run("1", format, ""), run("2", format, wire)
			if v1.code != 0 || v2.code != v1.code {
				t.Fatalf("exit %d over v1, %d over v2; want 0 both\nv1 stderr:\n%s\nv2 stderr:\n%s", v1.code, v2.code, v1.stderr, v2.stderr)
			}
			if format == "text" {
				a, b := normalScreen(v1.stdout), normalScreen(v2.stdout)
				if a != b {
					t.Errorf("the screens differ\nv1:\n%s\nv2:\n%s", a, b)
				}
				mustContain(t, "v2 screen", v2.stdout, "│ hello", "exit 1", "4 of 4 commands ran, 1 failed.")
			} else {
				a, b := eventShapes(t, v1.stdout), eventShapes(t, v2.stdout)
				if !slices.Equal(a, b) {
					t.Errorf("the json events differ in shape\nv1:\n%s\nv2:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
				}
			}
			checkV2Wire(t, wire)
		})
	}
}

// eventShapes lists each --format json event as its name, its members
// and, for a session_update, the kind of update.
func eventShapes(t *testing.T, stdout string) []string {
	t.Helper()
	var out []string
	for _, ev := range parseEvents(t, stdout) {
		keys := make([]string, 0, len(ev))
		for k := range ev {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		shape := ev.str("event") + " " + strings.Join(keys, ",")
		if u, ok := ev["update"].(map[string]any); ok {
			shape += " " + u["sessionUpdate"].(string)
		}
		out = append(out, shape)
	}
	return out
}

// wireMsg is one JSON-RPC message of a wire log.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			State         string `json:"state"`
			StopReason    string `json:"stopReason"`
		} `json:"update"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// readWire reads a wire log (wirelog_test.go).
func readWire(t *testing.T, path string) []wireRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []wireRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxWireLine)
	for sc.Scan() {
		var r wireRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("wire log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// checkV2Wire checks that a recorded run spoke v2: the agent answered
// initialize with protocolVersion 2, acknowledged session/prompt (a
// message id, no stop reason), and its last session update of the turn
// was an idle state_update with a stop reason.
func checkV2Wire(t *testing.T, path string) {
	t.Helper()
	recs := readWire(t, path)
	ids := map[string]string{} // request id → method, of the client's requests
	var initVersion *int
	prompted, acked := false, false
	lastUpdate := ""
	for _, r := range recs {
		var m wireMsg
		if json.Unmarshal(r.Msg, &m) != nil {
			continue
		}
		switch {
		case r.Dir == "client" && m.Method != "" && m.ID != nil:
			ids[string(m.ID)] = m.Method
			prompted = prompted || m.Method == "session/prompt"
		case r.Dir == "agent" && m.Result != nil:
			switch ids[string(m.ID)] {
			case "initialize":
				var res struct {
					ProtocolVersion int `json:"protocolVersion"`
				}
				_ = json.Unmarshal(m.Result, &res)
				initVersion = &res.ProtocolVersion
			case "session/prompt":
				acked = !strings.Contains(string(m.Result), `"stopReason"`)
			}
		case r.Dir == "agent" && m.Method == "session/update" && prompted:
			u := m.Params.Update
			lastUpdate = u.SessionUpdate + " " + u.State + " " + u.StopReason
		}
	}
	if initVersion == nil || *initVersion != 2 {
		t.Errorf("wire: the agent's initialize answer had protocolVersion %v, want 2", initVersion)
	}
	if !prompted || !acked {
		t.Errorf("wire: session/prompt sent %v, acknowledged without a stop reason %v", prompted, acked)
	}
	if lastUpdate != "state_update idle end_turn" {
		t.Errorf("wire: the turn's last update was %q, want an idle state_update with stop reason end_turn", lastUpdate)
	}
}

// TestProtocolChoice: --protocol 2 with an agent that answers 1 fails,
// naming the version it answered; auto goes on in v1 with it, as 1 does;
// a value other than auto, 1 or 2 is a usage error.
func TestProtocolChoice(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=v1only"}
	r := acpterm(t, opts{plain: true, env: env}, "run", "--protocol", "2", "-p", "hi", "--", testExe(t))
	if r.code != 3 || !strings.Contains(r.stderr, "the agent answered ACP protocol version 1, and --protocol 2 requires version 2") {
		t.Errorf("--protocol 2 with a v1 agent: exit %d, want 3 and the version it answered\n%s", r.code, r.stderr)
	}
	for _, p := range []string{"auto", "1"} {
		r := acpterm(t, opts{plain: true, env: env}, "run", "--protocol", p, "-p", "hi", "--", testExe(t))
		if r.code != 0 || !strings.Contains(r.stdout, "spoken in v1") {
			t.Errorf("--protocol %s with a v1 agent: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", p, r.code, r.stdout, r.stderr)
		}
	}
	r = acpterm(t, opts{plain: true, env: env}, "run", "--protocol", "3", "-p", "hi", "--", testExe(t))
	if r.code != 2 || !strings.Contains(r.stderr, "--protocol must be auto, 1 or 2") {
		t.Errorf("--protocol 3: exit %d, want 2 (usage)\n%s", r.code, r.stderr)
	}
}

// TestResumeV2: over ACP v2, --resume continues the session with
// session/resume replaying from the start (the SDK serves it through the
// agent's session/load): the history is shown marked as replayed, then
// the new turn; the wire shows the replay ended by a state_update before
// the answer, with no replay_complete.
func TestResumeV2(t *testing.T) {
	t.Parallel()
	state, dir := t.TempDir(), t.TempDir()
	env, log := sessionEnv(t, "sess-load", state)
	r := acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "--protocol", "2", "-p", "first question", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	wire := filepath.Join(t.TempDir(), "wire.jsonl")
	env = append(env, fakeAgentEnv+"=wirelog", wireLogEnv+"="+wire)
	// The recorder runs the agent: the same test binary, in its own mode.
	r = acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--no-color", "--protocol", "2", "--session", "sess_hist_1", "-p", "again",
		"--", testExe(t), "env", fakeAgentEnv+"=sess-load", testExe(t))
	if r.code != 0 {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "log", readLog(t, log), "load:sess_hist_1:"+dir+"\nprompt:sess_hist_1:again\n")
	want := []string{
		"↺ the history of session sess_hist_1, replayed by the agent:\n",
		"earlier answer\n",
		"second answer\n",
		"↺ end of the history; the session goes on from here\n",
		"answer to: again\n",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(r.stdout[at:], w)
		if i < 0 {
			t.Fatalf("stdout lacks %q, or has it out of order:\n%s", w, r.stdout)
		}
		at += i + len(w)
	}
	// The wire: session/resume with replayFrom; before its answer, the
	// replayed updates and last a state_update; no replay_complete.
	var resumeID string
	var before []string
	for _, rec := range readWire(t, wire) {
		var m struct {
			wireMsg
			Params struct {
				ReplayFrom *struct {
					Type string `json:"type"`
				} `json:"replayFrom"`
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(rec.Msg, &m) != nil {
			continue
		}
		switch {
		case rec.Dir == "client" && m.Method == "session/resume":
			if m.Params.ReplayFrom == nil || m.Params.ReplayFrom.Type != "start" {
				t.Errorf("session/resume without replayFrom start: %s", rec.Msg)
			}
			resumeID = string(m.ID)
		case resumeID != "" && rec.Dir == "agent" && m.Method == "session/update":
			before = append(before, m.Params.Update.SessionUpdate)
		case resumeID != "" && rec.Dir == "agent" && string(m.ID) == resumeID:
			if len(before) < 2 || before[len(before)-1] != "state_update" || slices.Contains(before, "replay_complete") {
				t.Errorf("the updates of the replay: %v; want the history, then a state_update, and no replay_complete", before)
			}
			resumeID = "done"
		}
	}
	if resumeID != "done" {
		t.Errorf("no answered session/resume on the wire")
	}
}

// TestBackgroundAtExitV2: a v2 turn that leaves the agent's dev server
// running ends with it listed, as the agent listed it: in text on
// stderr, and in --format json as a still_running event naming a display
// terminal acpterm could have stopped (it advertises capabilities.cancel).
func TestBackgroundAtExitV2(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=background-local", bgMarkEnv + "=atexit-v2"}
	r := acpterm(t, opts{plain: true, env: env}, "run", "--protocol", "2", "--format", "json", "-p", "start", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var still map[string]any
	for _, ev := range parseEvents(t, r.stdout) {
		if ev.str("event") == "still_running" {
			still = ev
		}
	}
	items, _ := still["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("still_running %v: want one item\n%s", still, r.stdout)
	}
	it := items[0].(map[string]any)
	if it["kind"] != "display_terminal" || it["label"] != "sleep 1000" || it["cancellable"] != true || it["atExit"] != "agent_shutdown" {
		t.Errorf("still running: %v; want the dev server, a display terminal that can be stopped, ending with the agent", it)
	}
	r = acpterm(t, opts{plain: true, env: env}, "run", "--protocol", "2", "-p", "start", "--", testExe(t))
	mustContain(t, "stderr", r.stderr, "acpterm: 1 still running as acpterm exits:", "agent command", "sleep 1000")
}
