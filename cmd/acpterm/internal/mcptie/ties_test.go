package mcptie

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

// shownGate stands for the run's: wait returns once a terminal was
// marked shown, or ctx ended.
type shownGate struct {
	mu    sync.Mutex
	shown map[termKey]chan struct{}
}

func newShownGate() *shownGate { return &shownGate{shown: map[termKey]chan struct{}{}} }

// ch is the channel of one terminal, made on first use. g.mu is held.
func (g *shownGate) ch(sessionID acp.SessionID, terminalID acp.TerminalID) chan struct{} {
	key := termKey{sessionID, terminalID}
	c, ok := g.shown[key]
	if !ok {
		c = make(chan struct{})
		g.shown[key] = c
	}
	return c
}

func (g *shownGate) mark(sessionID acp.SessionID, terminalID acp.TerminalID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch(sessionID, terminalID))
}

func (g *shownGate) wait(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) {
	g.mu.Lock()
	c := g.ch(sessionID, terminalID)
	g.mu.Unlock()
	select {
	case <-c:
	case <-ctx.Done():
	}
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
	ties := New(func() acp.SessionID { mu.Lock(); defer mu.Unlock(); return sid }, rec, shown.wait)
	terms := 0
	newTerm := func() acp.TerminalID {
		terms++
		id := acp.TerminalID("t" + strings.Repeat("x", terms))
		ev := terminal.Event{Kind: terminal.EventCreated, SessionID: "mcp-1", TerminalID: id,
			Info: &terminal.Info{SessionID: "mcp-1", TerminalID: id, Command: "echo"}}
		ties.TerminalEvent(ev)
		shown.mark(ev.SessionID, id)
		return id
	}
	call := func(session acp.SessionID, id acp.ToolCallID, st acp.ToolCallStatus) {
		ties.Update(&acp.SessionNotification{SessionID: session, Update: &acp.ToolCall{ToolCallID: id, Status: st}})
	}
	hint := func(term acp.TerminalID, id acp.ToolCallID) {
		ties.Hint(context.Background(), mcpexec.ToolCallHint{SessionID: "mcp-1", TerminalID: term, ToolCallID: id})
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
