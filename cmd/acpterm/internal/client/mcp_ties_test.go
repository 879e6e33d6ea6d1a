package client

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/terminal"
)

type tieRecorder struct {
	mu  sync.Mutex
	evs []terminal.Event
}

func (r *tieRecorder) TerminalEvent(ev terminal.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *tieRecorder) ties() map[acp.TerminalID]acp.ToolCallID {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[acp.TerminalID]acp.ToolCallID{}
	for _, ev := range r.evs {
		m[ev.TerminalID] = ev.Info.ToolCall
	}
	return m
}

// TestToolTies: a hint ties a terminal of the MCP server's only to a
// tool call reported in the run's session and running when the hint or
// the call comes; never to another session's, an ended one, or one
// reported before the session was known (a replayed history).
func TestToolTies(t *testing.T) {
	var mu sync.Mutex
	var sid acp.SessionID
	rec := &tieRecorder{}
	shown := newShownGate()
	ties := newToolTies(func() acp.SessionID { mu.Lock(); defer mu.Unlock(); return sid }, rec, shown)
	terms := 0
	newTerm := func() acp.TerminalID {
		terms++
		id := acp.TerminalID("t" + strings.Repeat("x", terms))
		ev := terminal.Event{Kind: terminal.EventCreated, SessionID: "mcp-1", TerminalID: id,
			Info: &terminal.Info{SessionID: "mcp-1", TerminalID: id, Command: "echo"}}
		ties.terminalEvent(ev)
		shown.mark(ev.SessionID, id)
		return id
	}
	call := func(session acp.SessionID, id acp.ToolCallID, st acp.ToolCallStatus) {
		ties.update(&acp.SessionNotification{SessionID: session, Update: &acp.ToolCall{ToolCallID: id, Status: st}})
	}
	hint := func(term acp.TerminalID, id acp.ToolCallID) {
		ties.hint(context.Background(), mcpexec.ToolCallHint{SessionID: "mcp-1", TerminalID: term, ToolCallID: id})
	}
	call("sess", "replayed", acp.ToolCallStatusInProgress) // before the session is known
	mu.Lock()
	sid = "sess"
	mu.Unlock()
	call("sess", "run", acp.ToolCallStatusInProgress)
	call("other", "foreign", acp.ToolCallStatusInProgress)
	call("sess", "ended", acp.ToolCallStatusInProgress)
	call("sess", "ended", acp.ToolCallStatusCompleted)

	tRun, tForeign, tEnded, tReplayed, tLater, tNever := newTerm(), newTerm(), newTerm(), newTerm(), newTerm(), newTerm()
	hint(tRun, "run")
	hint(tForeign, "foreign")
	hint(tEnded, "ended")
	hint(tReplayed, "replayed")
	hint(tLater, "later")
	hint(tNever, "never")
	call("other", "later", acp.ToolCallStatusInProgress) // another session's: still nothing
	call("sess", "later", acp.ToolCallStatusInProgress)

	got := rec.ties()
	want := map[acp.TerminalID]acp.ToolCallID{tRun: "run", tLater: "later"}
	if len(got) != len(want) || got[tRun] != "run" || got[tLater] != "later" {
		t.Errorf("ties = %v, want %v", got, want)
	}
	// Hints waiting for calls that never come are bounded.
	for range 3 * maxPendingTies {
		hint(newTerm(), "never")
	}
	ties.mu.Lock()
	n := len(ties.pending)
	ties.mu.Unlock()
	if n > maxPendingTies {
		t.Errorf("%d hints pending, want at most %d", n, maxPendingTies)
	}
}

// TestToolTiesJobs: the second created event that ties a terminal to a
// tool call (which may come after the command ended, when the tool call
// came late) starts no job again.
func TestToolTiesJobs(t *testing.T) {
	j := newJobsDriver(FormatText)
	j.r.TerminalEvent(created("mcp_t1", "echo hi"))
	j.r.TerminalEvent(exited("mcp_t1", 0))
	tied := created("mcp_t1", "echo hi")
	tied.Info.ToolCall = "toolu_1"
	j.r.TerminalEvent(tied)
	if got := running(j); got != "" {
		t.Errorf("jobs running:\n%s\nwant none", got)
	}
	j.r.Finish(acp.StopReasonEndTurn)
}
