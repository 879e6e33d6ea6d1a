package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/jobs"
)

// noStopV2 is why an item a v2 agent lists cannot be stopped.
const noStopV2 = "the agent does not offer to stop it (it does not advertise capabilities.cancel)"

// jobsV2 is the jobs list's source on an ACP v2 connection. There the
// agent says what is running: every state_update lists the session's
// background work (terminals and tool calls), and the SDK joins the list
// with each item's current form (acp.SessionView.Background). An item
// listed is started in the tracker, with a Cancel that sends
// terminal/cancel or tool_call/cancel when it advertises
// capabilities.cancel; it ends when its exit status or final status
// arrives (jobsLayer hears them in v1's words, as for any display
// terminal or tool call), or when a later list leaves it out.
type jobsV2 struct {
	mu sync.Mutex
	// listed is what each session's last list had, to end what a later
	// one leaves out.
	listed map[acp.SessionID]map[bgKey]bool
	// cancel makes an item's Cancel (driver.cancelBackground).
	cancel func(sid acp.SessionID, kind jobs.Kind, id string) func(context.Context) error
}

type bgKey struct {
	kind jobs.Kind
	id   string
}

// useV2 switches the layer to the v2 source: from now on the agent's
// lists start items, not the display terminals and tool calls seen.
func (l *jobsLayer) useV2(cancel func(sid acp.SessionID, kind jobs.Kind, id string) func(context.Context) error) {
	l.v2.Store(&jobsV2{listed: map[acp.SessionID]map[bgKey]bool{}, cancel: cancel})
}

// isV2 reports whether the agent lists the background work (v2).
func (l *jobsLayer) isV2() bool { return l.v2.Load() != nil }

// background takes one state update's list of session sid: items is
// the list joined with the view, reported whether the update had one
// (without one, nothing is taken as ended).
func (l *jobsLayer) background(sid acp.SessionID, items []acp.BackgroundItem, reported bool) {
	v2 := l.v2.Load()
	if v2 == nil || !reported {
		return
	}
	seen := map[bgKey]bool{}
	for _, it := range items {
		item, ok := backgroundItem(sid, it)
		if !ok {
			continue
		}
		k := bgKey{item.Kind, item.ID}
		seen[k] = true
		if it.Cancellable {
			item.Cancel = v2.cancel(sid, k.kind, k.id)
		} else {
			item.NoCancel = noStopV2
		}
		l.t.Start(item)
	}
	v2.mu.Lock()
	before := v2.listed[sid]
	v2.listed[sid] = seen
	v2.mu.Unlock()
	for k := range before {
		if seen[k] {
			continue
		}
		// The agent no longer lists it: it is over, however it ended.
		if k.kind == jobs.ToolCall {
			l.t.End(k.kind, k.id, "ended")
		} else {
			l.t.EndTerminal(k.id, "ended")
		}
	}
}

// backgroundItem is the tracker's item for one entry of a v2 list, and
// false for an entry that is over already (an exit status, a final
// status) or names nothing.
func backgroundItem(sid acp.SessionID, it acp.BackgroundItem) (jobs.Item, bool) {
	switch {
	case it.Terminal != nil:
		t := it.Terminal
		if t.ExitStatus != nil || t.TerminalID == "" {
			return jobs.Item{}, false
		}
		item := jobs.Item{Kind: jobs.DisplayTerminal, ID: string(t.TerminalID), SessionID: string(sid)}
		if t.Command != nil {
			item.Label = *t.Command
		}
		return item, true
	case it.ToolCall != nil:
		tc := it.ToolCall
		if tc.ToolCallID == "" || tc.Status != nil && v2ToolDone(*tc.Status) {
			return jobs.Item{}, false
		}
		item := jobs.Item{Kind: jobs.ToolCall, ID: string(tc.ToolCallID), SessionID: string(sid)}
		if tc.Title != nil {
			item.Label = *tc.Title
		}
		return item, true
	}
	return jobs.Item{}, false
}

// v2ToolDone reports whether a v2 tool call status is final.
func v2ToolDone(s acp.V2ToolCallStatus) bool {
	return s == acp.V2ToolCallStatusCompleted || s == acp.V2ToolCallStatusFailed || s == acp.V2ToolCallStatusCancelled
}

// cancelBackground is the Cancel of a v2 background item: terminal/cancel
// or tool_call/cancel, whose answer means the agent accepted; then the
// wait, bounded by ctx, for the end the agent reports (the terminal's exit
// status, the tool call's final status).
func (d *driver) cancelBackground(sid acp.SessionID, kind jobs.Kind, id string) func(context.Context) error {
	return func(ctx context.Context) error {
		var err error
		if kind == jobs.ToolCall {
			_, err = d.conn.CancelToolCall(ctx, &acp.V2CancelToolCallRequest{SessionID: sid, ToolCallID: acp.ToolCallID(id)})
		} else {
			_, err = d.conn.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: sid, TerminalID: acp.TerminalID(id)})
		}
		if err != nil {
			return err
		}
		if err := d.jobs.t.WaitEnd(ctx, kind, id); err != nil {
			return fmt.Errorf("the agent accepted the cancel, and has not reported the end yet (%v)", err)
		}
		return nil
	}
}

// SessionStateV2 takes a v2 state update (acp.V2StateHandler): the
// background list goes to the jobs list.
func (h *handler) SessionStateV2(ctx context.Context, sid acp.SessionID, u *acp.V2StateUpdate) error {
	if h.state != nil {
		h.state(sid)
	}
	return nil
}

var _ acp.V2StateHandler = (*handler)(nil)

// backgroundChanged feeds the jobs list from the session's view after a
// state update.
func (d *driver) backgroundChanged(sid acp.SessionID) {
	d.mu.Lock()
	conn := d.conn
	d.mu.Unlock()
	if conn == nil {
		return
	}
	items, reported := conn.View(sid).Background()
	d.jobs.background(sid, items, reported)
}
