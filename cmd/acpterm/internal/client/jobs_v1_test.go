package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/jobs"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/terminal"
)

// jobsDriver is a driver with its renderers and nothing else: what the
// background work is fed through, and where it is shown. out is stdout,
// tty the session's terminal, errOut stderr.
type jobsDriver struct {
	*driver
	out, tty, errOut *bytes.Buffer
	disp             *render.DisplayTerminals
}

func newJobsDriver(format Format) *jobsDriver {
	j := &jobsDriver{out: &bytes.Buffer{}, tty: &bytes.Buffer{}, errOut: &bytes.Buffer{}}
	j.driver = &driver{cfg: Config{Format: format, Stdout: j.out, Stderr: j.errOut, TTYOut: j.tty}}
	j.startRendering()
	j.disp = render.NewDisplayTerminals(j.r)
	return j
}

// replay feeds the session updates of a recorded transcript (one
// session/update params object a line) as the handler does: through the
// display terminals' adapter.
func (j *jobsDriver) replay(t *testing.T, lines string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		j.disp.SessionUpdate(&n, json.RawMessage(line))
	}
}

// created is the event of one of acpterm's terminals starting.
func created(id, command string) terminal.Event {
	return terminal.Event{Kind: terminal.EventCreated, SessionID: "s1", TerminalID: acp.TerminalID(id),
		Info: &terminal.Info{SessionID: "s1", TerminalID: acp.TerminalID(id), Command: command, Shell: true, Started: time.Now()}}
}

func exited(id string, code uint32) terminal.Event {
	return terminal.Event{Kind: terminal.EventExited, SessionID: "s1", TerminalID: acp.TerminalID(id),
		Status: &terminal.ExitStatus{ExitCode: &code}}
}

func running(j *jobsDriver) string {
	items, more := j.jobs.t.Running()
	var b []string
	for _, it := range items {
		b = append(b, fmt.Sprintf("%s %s %q stop=%v", it.Kind.Name(), it.ID, it.Label, it.Cancel != nil))
	}
	if more > 0 {
		b = append(b, fmt.Sprintf("+%d", more))
	}
	return strings.Join(b, "\n")
}

// The turn of an agent that mixes everything, as recorded: a terminal of
// acpterm's under its tool call, codex's display terminal (Zed's _meta)
// that never exits, claude's announced before its command is known, a v2
// terminal_update that exits, a tool call left pending, one completed.
const mixedTurn = `
{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call_sleep","title":"sleep 1000","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"term_1"}]}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call_dev","title":"npm run dev","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_dev"}],"_meta":{"terminal_info":{"terminal_id":"call_dev","cwd":"/w"}}}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_dev","_meta":{"terminal_output":{"terminal_id":"call_dev","data":"listening on :3000\n"}}}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Terminal","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"toolu_1"}],"_meta":{"terminal_info":{"terminal_id":"toolu_1"}}}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"in_progress","rawInput":{"command":"tail -f log"}}}
{"sessionId":"s1","update":{"sessionUpdate":"terminal_update","terminalId":"v2_t","command":"make watch"}}
{"sessionId":"s1","update":{"sessionUpdate":"terminal_update","terminalId":"v2_t","exitStatus":{"exitCode":0}}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call_fetch","title":"Fetch docs","kind":"fetch"}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call_read","title":"Read a file","kind":"read","status":"in_progress"}}
{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_read","status":"completed"}}
`

func TestJobsFromV1(t *testing.T) {
	j := newJobsDriver(FormatText)
	j.r.TerminalEvent(created("term_1", "sleep 1000"))
	j.replay(t, mixedTurn)
	want := strings.Join([]string{
		`terminal term_1 "sleep 1000" stop=true`,
		`display_terminal call_dev "npm run dev" stop=false`,
		`display_terminal toolu_1 "tail -f log" stop=false`,
		`tool_call call_fetch "Fetch docs" stop=false`,
	}, "\n")
	if got := running(j); got != want {
		t.Fatalf("running after the turn:\n%s\nwant\n%s", got, want)
	}
	// The command of acpterm's terminal exits: its tool call, left
	// open, is over too; the display terminal's tool call ends, and with
	// it its terminal.
	j.r.TerminalEvent(exited("term_1", 0))
	j.replay(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"failed"}}`)
	want = strings.Join([]string{
		`display_terminal call_dev "npm run dev" stop=false`,
		`tool_call call_fetch "Fetch docs" stop=false`,
	}, "\n")
	if got := running(j); got != want {
		t.Fatalf("running after the exits:\n%s\nwant\n%s", got, want)
	}
	// A cancelled turn's open tool calls are cancelled (ACP's prompt
	// turn); commands run on.
	j.jobs.endTurn(acp.StopReasonCancelled)
	if got, want := running(j), `display_terminal call_dev "npm run dev" stop=false`; got != want {
		t.Fatalf("running after a cancelled turn:\n%s\nwant\n%s", got, want)
	}
}

// A replayed history is over: nothing in it is tracked.
func TestJobsNotFromReplay(t *testing.T) {
	j := newJobsDriver(FormatText)
	j.jobs.replay(true)
	j.replay(t, mixedTurn)
	j.jobs.replay(false)
	if got := running(j); got != "" {
		t.Fatalf("tracked from a replay:\n%s", got)
	}
}

// An agent that announces 10,000 display terminals (each dialect) and
// 10,000 tool calls and ends none: what is kept stays bounded, the rest
// is counted, and what is shown of it is bounded too.
func TestJobsHostileMany(t *testing.T) {
	j := newJobsDriver(FormatJSON)
	for i := range 10000 {
		var line string
		switch i % 3 {
		case 0:
			line = fmt.Sprintf(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c%d","title":"t","status":"in_progress","_meta":{"terminal_info":{"terminal_id":"z%d"}}}}`, i, i)
		case 1:
			line = fmt.Sprintf(`{"sessionId":"s1","update":{"sessionUpdate":"terminal_update","terminalId":"v%d","command":"x"}}`, i)
		default:
			line = fmt.Sprintf(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c%d","title":"t"}}`, i)
		}
		j.replay(t, line)
	}
	items, more := j.jobs.t.Running()
	if len(items) != jobs.DefaultMax || more == 0 {
		t.Fatalf("%d kept, %d more; want %d kept and the rest counted", len(items), more, jobs.DefaultMax)
	}
	j.listJobs()
	if lines := strings.Count(j.tty.String(), "\n"); lines > maxJobsListed+5 {
		t.Fatalf("/jobs printed %d lines", lines)
	}
	mustHave(t, "/jobs", j.tty.String(), fmt.Sprintf("… and %d more that acpterm does not keep track of", more))
	j.showLeft(j.leftAtExit())
	if lines := strings.Count(j.errOut.String(), "\n"); lines != maxJobsAtExit+2 {
		t.Fatalf("the list at exit has %d lines, want %d:\n%s", lines, maxJobsAtExit+2, j.errOut)
	}
	mustHave(t, "stderr", j.errOut.String(), fmt.Sprintf("acpterm: %d still running as acpterm exits:\n", len(items)+more),
		fmt.Sprintf("  and %d more\n", len(items)-maxJobsAtExit+more))
}

func mustHave(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Fatalf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// What the agent names its work is printed sanitized, in every list.
func TestJobsSanitized(t *testing.T) {
	j := newJobsDriver(FormatJSON)
	j.replay(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"evil\u001b]0;owned\u0007","title":"clear \u001b[2J\u009b31m\u202eevil","status":"in_progress"}}`)
	j.r.TerminalEvent(created("term_1", "printf '\x1b[2J'"))
	j.listJobs()
	j.cancelJob(context.Background(), "evil\x1b]0;owned\x07")
	j.cancelJob(context.Background(), "\x1b[2Jnothing")
	left, more := j.leftAtExit()
	j.showLeft(left, more)
	j.sw.emitJSON(stillRunningEvent(left, more))
	for what, s := range map[string]string{"tty": j.tty.String(), "stderr": j.errOut.String(), "stdout": j.out.String()} {
		if strings.ContainsAny(s, "\x1b\x07\u009b\u202e") {
			t.Errorf("%s carries the agent's control characters: %q", what, s)
		}
	}
	mustHave(t, "tty", j.tty.String(), `clear \x1b[2J\u009b31m\u202eevil`, `nothing running is called \x1b[2Jnothing`)
	lines := strings.Split(strings.TrimSpace(j.out.String()), "\n")
	var ev jsonStillRunning
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil || ev.Event != "still_running" || len(ev.Items) != 2 ||
		ev.Items[0].ID != "evil\x1b]0;owned\x07" || ev.Items[0].AtExit != "agent_shutdown" || ev.Items[1].AtExit != "killed" ||
		!ev.Items[1].Cancellable || ev.Items[0].Cancellable {
		t.Fatalf("still_running event %+v (%v) from %q", ev, err, j.out)
	}
}

// /cancel: every wrong word changes nothing and says why; a terminal is
// stopped once.
func TestCancelCommand(t *testing.T) {
	j := newJobsDriver(FormatText)
	var killed []acp.TerminalID
	j.jobs.stop = func(ctx context.Context, sid acp.SessionID, tid acp.TerminalID) error {
		killed = append(killed, tid)
		if tid == "term_gone" {
			return errors.New("terminal term_gone: not found")
		}
		j.jobs.t.EndTerminal(string(tid), "killed by SIGTERM")
		return nil
	}
	j.r.TerminalEvent(created("term_1", "sleep 1000"))
	j.r.TerminalEvent(created("term_gone", "sleep 1"))
	j.replay(t, `{"sessionId":"s1","update":{"sessionUpdate":"terminal_update","terminalId":"v2_t","command":"make watch"}}`)
	j.replay(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call_x","title":"Think","status":"in_progress"}}`)
	before := running(j)
	for _, tt := range []struct{ arg, want string }{
		{"", "acpterm: /cancel needs the ID of what to stop; /jobs lists them\n"},
		{"9", "acpterm: nothing running is called 9; /jobs lists what is\n"},
		{"term_", "acpterm: nothing running is called term_; /jobs lists what is\n"},
		{"3", "acpterm: 3 (agent command make watch) cannot be stopped: " + noStopDisplay + "\n"},
		{"4", "acpterm: 4 (tool call Think) cannot be stopped: " + noStopToolCall + "\n"},
		{"2", "acpterm: could not stop 2 (terminal sleep 1): terminal term_gone: not found\n"},
	} {
		j.tty.Reset()
		j.cancelJob(context.Background(), tt.arg)
		if got := j.tty.String(); got != tt.want {
			t.Errorf("/cancel %q said\n  %q\nwant\n  %q", tt.arg, got, tt.want)
		}
		if got := running(j); got != before {
			t.Fatalf("/cancel %q changed what runs:\n%s", tt.arg, got)
		}
	}
	j.tty.Reset()
	j.cancelJob(context.Background(), "#1")
	j.cancelJob(context.Background(), "term_1")
	want := "stopped 1 (terminal sleep 1000): killed by SIGTERM; the terminal stays until the agent releases it\n" +
		"acpterm: 1 (terminal sleep 1000) has ended already (killed by SIGTERM)\n"
	if got := j.tty.String(); got != want {
		t.Errorf("/cancel said\n%q\nwant\n%q", got, want)
	}
	if len(killed) != 2 || killed[1] != "term_1" {
		t.Errorf("killed %v", killed)
	}
	j.tty.Reset()
	j.listJobs()
	if got := j.tty.String(); strings.Contains(got, "sleep 1000") || !strings.Contains(got, "sleep 1\n") {
		t.Errorf("/jobs after the stop:\n%s", got)
	}
}

func TestJobsNothing(t *testing.T) {
	j := newJobsDriver(FormatJSON)
	j.listJobs()
	j.sayRunning()
	j.showLeft(j.leftAtExit())
	if j.tty.String() != "nothing is running in the background\n" || j.errOut.Len() != 0 {
		t.Fatalf("with nothing running, tty %q, stderr %q", j.tty, j.errOut)
	}
}
