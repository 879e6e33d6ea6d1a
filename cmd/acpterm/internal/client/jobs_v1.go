package client

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/jobs"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// Why the items acpterm cannot stop in ACP v1 cannot be stopped.
const (
	noStopDisplay  = "the agent runs this command itself, and ACP v1 has no request to stop it (v2's terminal/cancel)"
	noStopToolCall = "a tool call is the agent's, and ACP v1 has no request to stop one (v2's tool_call/cancel); Ctrl-C during a turn cancels the whole turn"
)

// jobsLayer is the run's first renderer layer: it passes everything on,
// and keeps the background work of the session (jobs.Tracker) from what
// it sees in ACP v1:
//
//   - a terminal acpterm runs is running from its created event to its
//     exit (or release, which kills it);
//   - a display terminal (any dialect: render.DisplayTerminals turns each
//     into the same terminal events, with Info.Display) from its created
//     event to its exit, or the end of its tool call;
//   - a tool call from its tool_call (pending or in_progress) to an
//     update that says completed or failed, or the end of a cancelled
//     turn, whose open tool calls the client is to take as cancelled
//     (ACP's prompt turn).
//
// It sees the display terminals' events, which render.DisplayTerminals
// sends to the run's renderer, and the terminal events the pump sends,
// in the order the renderers do. Nothing of a replayed history is
// tracked: it is over.
type jobsLayer struct {
	render.Renderer
	t *jobs.Tracker
	// stop kills one of acpterm's terminals (the item's Cancel).
	stop      func(ctx context.Context, sid acp.SessionID, tid acp.TerminalID) error
	replaying atomic.Bool
	// v2 is set on a v2 connection, before the first session: the agent
	// lists the background work, and only its lists start items
	// (jobs_v2.go); what is seen here only names and ends them.
	v2 atomic.Pointer[jobsV2]
}

func newJobsLayer(r render.Renderer, stop func(ctx context.Context, sid acp.SessionID, tid acp.TerminalID) error) *jobsLayer {
	return &jobsLayer{Renderer: r, t: jobs.NewTracker(jobs.DefaultMax, nil), stop: stop}
}

// replay marks the start and end of a replayed history.
func (l *jobsLayer) replay(on bool) { l.replaying.Store(on) }

// endTurn is the end of a turn: a cancelled one's open tool calls are
// taken as cancelled.
func (l *jobsLayer) endTurn(reason acp.StopReason) {
	// In v2 a tool call the agent still lists outlives the turn.
	if reason == acp.StopReasonCancelled && !l.isV2() {
		l.t.EndAll(jobs.ToolCall, "cancelled")
	}
}

func (l *jobsLayer) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	if !l.replaying.Load() {
		l.toolCall(n)
	}
	l.Renderer.SessionUpdate(n, raw)
}

// toolCall keeps track of the tool call n starts, changes or ends.
func (l *jobsLayer) toolCall(n *acp.SessionNotification) {
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		id := string(u.ToolCallID)
		if toolDone(u.Status) {
			l.t.End(jobs.ToolCall, id, string(u.Status))
			return
		}
		terms := contentTerminals(u.Content)
		if terms == nil {
			terms = []string{}
		}
		if !l.t.Update(jobs.ToolCall, id, u.Title, terms) && !l.isV2() {
			l.t.Start(jobs.Item{Kind: jobs.ToolCall, ID: id, SessionID: string(n.SessionID), Label: u.Title,
				Terminals: terms, NoCancel: noStopToolCall})
		}
	case *acp.ToolCallUpdate:
		id := string(u.ToolCallID)
		if u.Status != nil && toolDone(*u.Status) {
			l.t.End(jobs.ToolCall, id, string(*u.Status))
			return
		}
		var title string
		if u.Title != nil {
			title = *u.Title
		}
		terms := contentTerminals(u.Content)
		if l.t.Update(jobs.ToolCall, id, title, terms) || u.Status == nil || l.isV2() {
			return
		}
		// An update that reopens a tool call, or the first word of one
		// that was never announced: it runs.
		l.t.Start(jobs.Item{Kind: jobs.ToolCall, ID: id, SessionID: string(n.SessionID), Label: title,
			Terminals: terms, NoCancel: noStopToolCall})
	}
}

// toolDone reports whether a tool call status is an end (v2 adds
// cancelled, which reaches the v1 handlers as it is).
func toolDone(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed || s == acp.ToolCallStatus(acp.V2ToolCallStatusCancelled)
}

// contentTerminals lists the terminals a tool call's content embeds; nil
// for no content (an update that leaves it as it is).
func contentTerminals(content []acp.ToolCallContent) []string {
	if content == nil {
		return nil
	}
	ids := []string{}
	for _, c := range content {
		if t, ok := c.(*acp.Terminal); ok {
			ids = append(ids, string(t.TerminalID))
		}
	}
	return ids
}

func (l *jobsLayer) TerminalEvent(ev terminal.Event) {
	l.terminal(ev)
	l.Renderer.TerminalEvent(ev)
}

// terminal keeps track of the terminal ev is about.
func (l *jobsLayer) terminal(ev terminal.Event) {
	id := string(ev.TerminalID)
	switch ev.Kind {
	case terminal.EventCreated:
		if ev.Info == nil || l.replaying.Load() {
			return
		}
		if ev.Info.ToolCall != "" && !ev.Info.Display {
			return // a second one, tying a terminal started already to a tool call
		}
		label := textsafe.CommandLine(ev.Info.Command, ev.Info.Args)
		if ev.Info.Display {
			// A second created event names the command found later.
			if !l.t.Update(jobs.DisplayTerminal, id, label, nil) && !l.isV2() {
				l.t.Start(jobs.Item{Kind: jobs.DisplayTerminal, ID: id, SessionID: string(ev.SessionID), Label: label,
					NoCancel: noStopDisplay})
			}
			return
		}
		sid, tid := ev.SessionID, ev.TerminalID
		l.t.Start(jobs.Item{Kind: jobs.ClientTerminal, ID: id, SessionID: string(sid), Label: label, Started: ev.Info.Started,
			Cancel: func(ctx context.Context) error { return l.stop(ctx, sid, tid) }})
	case terminal.EventExited, terminal.EventReleased:
		l.t.EndTerminal(id, endedHow(ev))
	}
}

// endedHow words how a terminal ended, for the list of ended items.
func endedHow(ev terminal.Event) string {
	switch {
	case ev.Lost != "":
		return "lost: " + ev.Lost
	case ev.Status != nil && (ev.Status.ExitCode != nil || ev.Status.Signal != nil):
		return ev.Status.String()
	case ev.Kind == terminal.EventReleased:
		return "released"
	}
	return "ended"
}
