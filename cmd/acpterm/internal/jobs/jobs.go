// Package jobs keeps track of the work of an ACP session that may outlive
// a turn: commands still running in the terminals acpterm runs for the
// agent, commands the agent runs itself and shows (display terminals), and
// tool calls the agent left open. An interactive session lists them
// (/jobs) and stops them (/cancel); every run says what is left when it
// ends.
//
// The model does not depend on where its items come from. In ACP v1 the
// client feeds a Tracker from the session updates and terminal events it
// sees (cmd/acpterm/internal/client); in v2, where the agent lists its
// background work in state_update and stops it on terminal/cancel or
// tool_call/cancel, a source calls the same Start and End, with a Cancel
// that sends the request.
//
// Everything an agent sends is untrusted: a Tracker keeps at most Max
// running items and a few ended ones, each label and ID bounded, whatever
// the agent starts and never ends; the rest are counted, not kept. Labels
// and IDs are kept as sent: sanitize them to print them.
package jobs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// Kind is what a background item is.
type Kind uint8

const (
	// ClientTerminal is a terminal acpterm runs for the agent
	// (terminal/create) whose command is still running. acpterm can stop it.
	ClientTerminal Kind = iota + 1
	// DisplayTerminal is a command the agent runs itself and streams to
	// the client for display (Zed's _meta.terminal_info, JetBrains' deltas,
	// v2's terminal_update), with no exit reported yet.
	DisplayTerminal
	// ToolCall is a tool call the agent has not ended (pending or
	// in_progress).
	ToolCall
)

// String names the kind for people.
func (k Kind) String() string {
	switch k {
	case ClientTerminal:
		return "terminal"
	case DisplayTerminal:
		return "agent command"
	case ToolCall:
		return "tool call"
	}
	return "unknown"
}

// Name names the kind for programs (JSON): terminal, display_terminal,
// tool_call.
func (k Kind) Name() string {
	switch k {
	case ClientTerminal:
		return "terminal"
	case DisplayTerminal:
		return "display_terminal"
	case ToolCall:
		return "tool_call"
	}
	return "unknown"
}

// State is where an item is in its life.
type State uint8

const (
	// Running: started, not ended.
	Running State = iota + 1
	// Stopping: Cancel was called and the end has not come yet.
	Stopping
	// Ended: the command exited, the terminal was released, the tool call
	// ended.
	Ended
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Stopping:
		return "stopping"
	case Ended:
		return "ended"
	}
	return "unknown"
}

// Item is one piece of background work.
type Item struct {
	// Ref is acpterm's number for the item, given by the Tracker in the
	// order items start and never reused: what /jobs shows and /cancel
	// takes (IDs are long, random, or the agent's text).
	Ref int
	// Kind and ID name the item: the terminal's ID (acpterm's for a client
	// terminal, the agent's for a display terminal) or the tool call's.
	Kind Kind
	ID   string
	// SessionID is the session the item belongs to.
	SessionID string
	// Label says what the item is: the command line, or the tool call's
	// title. It is the agent's text, kept as sent (bounded).
	Label string
	// Started is when it started, or when acpterm first heard of it.
	Started time.Time
	State   State
	// How says how it ended, once State is Ended ("exit 0", "killed by
	// SIGTERM", "completed", "released").
	How string
	// Cancel stops the item: nil when it cannot be stopped from here, and
	// NoCancel then says why. It returns once the stop is under way or
	// done; the item's end is recorded by whoever hears of it (End).
	Cancel   func(ctx context.Context) error
	NoCancel string
	// Terminals are the IDs of the terminals a tool call embeds (its
	// content): such a tool call is their work, listed as them (Running).
	Terminals []string
}

// Bounds of what a Tracker keeps.
const (
	// DefaultMax is how many running items a Tracker keeps by default.
	DefaultMax = 256
	// MaxLabel bounds a label, in bytes.
	MaxLabel = 512
	// MaxID bounds an ID: an item with a longer one is counted, not kept.
	MaxID = 1 << 10
	// maxEnded is how many ended items are remembered, to tell a late
	// /cancel that the item has ended and how.
	maxEnded = 32
	// maxTerminals bounds the terminals remembered of one tool call.
	maxTerminals = 4
)

// Errors of Stop.
var (
	ErrUnknown    = errors.New("no such background item")
	ErrEnded      = errors.New("the item has ended")
	ErrStopping   = errors.New("the item is being stopped already")
	ErrCannotStop = errors.New("the item cannot be stopped from here")
)

type key struct {
	kind Kind
	id   string
}

// Tracker keeps the background items of a client. Its methods are safe for
// concurrent use.
type Tracker struct {
	mu    sync.Mutex
	max   int
	now   func() time.Time
	next  int
	live  map[key]*Item
	more  [2]int // running items not kept: terminals, tool calls (classOf)
	ended []Item // the last maxEnded items that ended, oldest first
	// ends is closed, and replaced, each time an item ends: WaitEnd's
	// wake-up.
	ends chan struct{}
}

// NewTracker returns a Tracker keeping at most max running items
// (DefaultMax when max <= 0), timed by now (time.Now when nil).
func NewTracker(max int, now func() time.Time) *Tracker {
	if max <= 0 {
		max = DefaultMax
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{max: max, now: now, live: map[key]*Item{}, ends: make(chan struct{})}
}

// Start records a running item, or updates the running one of the same
// kind and ID: its label, terminals and Cancel when given. A zero Started
// means now. It returns the item's Ref, or 0 when the item is not kept
// (the tracker is full, or the ID too long): it is then counted in the
// "more" of Running.
func (t *Tracker) Start(it Item) int {
	if it.Kind < ClientTerminal || it.Kind > ToolCall || it.ID == "" {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{it.Kind, it.ID}
	if cur := t.live[k]; cur != nil {
		if it.Label != "" {
			cur.Label = clip(it.Label)
		}
		if it.Terminals != nil {
			cur.Terminals = keepTerminals(it.Terminals)
		}
		if it.Cancel != nil {
			cur.Cancel, cur.NoCancel = it.Cancel, ""
		}
		return cur.Ref
	}
	if len(it.ID) > MaxID || len(t.live) >= t.max {
		t.more[classOf(it.Kind)]++
		return 0
	}
	t.next++
	n := it
	n.Ref, n.State, n.How = t.next, Running, ""
	n.Label = clip(it.Label)
	n.Terminals = keepTerminals(it.Terminals)
	if n.Started.IsZero() {
		n.Started = t.now()
	}
	if n.Cancel != nil {
		n.NoCancel = ""
	}
	t.live[k] = &n
	return n.Ref
}

// Update changes the label (when not "") and the terminals (when not
// nil) of a running item, and reports whether there was one: an agent
// names its command after it announced it, and a tool call's content
// replaces the last.
func (t *Tracker) Update(kind Kind, id, label string, terminals []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.live[key{kind, id}]
	if cur == nil {
		return false
	}
	if label != "" {
		cur.Label = clip(label)
	}
	if terminals != nil {
		cur.Terminals = keepTerminals(terminals)
	}
	return true
}

// End records that an item ended, and how. An item not kept that ends is
// taken off the count of those not kept; an item that ended already is
// left as it is.
func (t *Tracker) End(kind Kind, id, how string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{kind, id}
	if cur := t.live[k]; cur != nil {
		t.endLocked(k, cur, how)
		return
	}
	t.endUnknownLocked(kind, id)
}

// EndTerminal records that the terminal id ended, whether it is a client
// or a display terminal (their IDs cannot clash: display messages naming
// one of acpterm's own terminals are dropped before they get here).
func (t *Tracker) EndTerminal(id, how string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, kind := range []Kind{ClientTerminal, DisplayTerminal} {
		if cur := t.live[key{kind, id}]; cur != nil {
			t.endLocked(key{kind, id}, cur, how)
			return
		}
	}
	t.endUnknownLocked(ClientTerminal, id)
}

// endUnknownLocked handles the end of an item not running: one that ended
// already is left as it is; else it was one of those not kept (or never
// started), and beyond the bound the count is all there is: it takes one
// off it.
func (t *Tracker) endUnknownLocked(kind Kind, id string) {
	for i := range t.ended {
		if e := &t.ended[i]; e.ID == id && (e.Kind == kind || kind != ToolCall && e.Kind != ToolCall) {
			return
		}
	}
	if c := classOf(kind); c >= 0 && t.more[c] > 0 {
		t.more[c]--
	}
}

// classOf is the count of items not kept that an item of kind is counted
// in: terminals (client or display) or tool calls; -1 for no kind.
func classOf(kind Kind) int {
	switch kind {
	case ClientTerminal, DisplayTerminal:
		return 0
	case ToolCall:
		return 1
	}
	return -1
}

// EndAll ends every running item of a kind, and forgets those not kept
// (of its class: terminals or tool calls): the tool calls of a cancelled
// turn, which the client marks cancelled.
func (t *Tracker) EndAll(kind Kind, how string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, cur := range t.live {
		if k.kind == kind {
			t.endLocked(k, cur, how)
		}
	}
	if c := classOf(kind); c >= 0 {
		t.more[c] = 0
	}
}

// WaitEnd waits until the item of kind and id is not running (it ended,
// or was never kept) or ctx ends: a Cancel that sends a request the
// agent only accepts waits here for the end the agent then reports.
func (t *Tracker) WaitEnd(ctx context.Context, kind Kind, id string) error {
	for {
		t.mu.Lock()
		_, running := t.live[key{kind, id}]
		ends := t.ends
		t.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-ends:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (t *Tracker) endLocked(k key, cur *Item, how string) {
	close(t.ends)
	t.ends = make(chan struct{})
	delete(t.live, k)
	cur.State, cur.How, cur.Cancel = Ended, clip(how), nil
	if len(t.ended) == maxEnded {
		t.ended = slices.Delete(t.ended, 0, 1)
	}
	t.ended = append(t.ended, *cur)
}

// Running lists the items still running (or being stopped), in the order
// they started, with the count of those not listed: the running items the
// tracker did not keep. A tool call that embeds terminals is their work:
// it is listed as its terminals while they run, and not at all once they
// have ended (an agent may leave such a tool call open, but what it ran
// is over).
func (t *Tracker) Running() ([]Item, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Item
	for _, it := range t.live {
		if it.Kind == ToolCall && len(it.Terminals) > 0 {
			continue
		}
		out = append(out, copyItem(it))
	}
	slices.SortFunc(out, func(a, b Item) int { return a.Ref - b.Ref })
	more := 0
	for _, n := range t.more {
		more += n
	}
	return out, more
}

func copyItem(it *Item) Item {
	c := *it
	c.Terminals = slices.Clone(it.Terminals)
	return c
}

func clip(s string) string {
	if len(s) <= MaxLabel {
		return s
	}
	return utf8cut.Head(s, MaxLabel) + "…"
}

// keepTerminals is what is kept of a tool call's terminals: the first
// few, each within MaxID (an empty list stays non-nil: it replaces).
func keepTerminals(ids []string) []string {
	if ids == nil {
		return nil
	}
	out := make([]string, 0, min(len(ids), maxTerminals))
	for _, id := range ids {
		if len(out) == maxTerminals {
			break
		}
		if id != "" && len(id) <= MaxID && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
