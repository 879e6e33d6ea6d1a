package render

import (
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// The text renderer's model of a turn: the tool calls the agent reports
// and the terminals they run, as they change.

// toolView is what the renderer knows of a tool call.
type toolView struct {
	id        acp.ToolCallID
	title     string
	kind      acp.ToolKind
	status    acp.ToolCallStatus
	terminals []acp.TerminalID
	// texts is the first lines of the text content, as many as a block
	// shows (TailLines), each cut to maxPartialLine bytes; moreTexts
	// counts the other lines. An agent's megabytes of text are not kept
	// for the rest of the turn to show twenty lines of them.
	texts     []string
	moreTexts int
	diffs     []string
	started   time.Time
	queued    bool
	printed   bool // its block is printed, and the view emptied (toolPrinted)
	cancelled bool // unfinished when the turn was cancelled
	// prev and next link the running tool calls (textRenderer.active).
	prev, next *toolView
}

// toolList is the running tool calls in the order they came: a linked
// list, so that one that ends leaves it in constant time however many
// run, and the live region reads only the few at its head that it shows.
type toolList struct{ head, tail *toolView }

func (l *toolList) push(tv *toolView) {
	tv.prev, tv.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = tv
	} else {
		l.head = tv
	}
	l.tail = tv
}

func (l *toolList) has(tv *toolView) bool { return tv.prev != nil || l.head == tv }

func (l *toolList) remove(tv *toolView) {
	if tv.prev != nil {
		tv.prev.next = tv.next
	} else {
		l.head = tv.next
	}
	if tv.next != nil {
		tv.next.prev = tv.prev
	} else {
		l.tail = tv.prev
	}
	tv.prev, tv.next = nil, nil
}

// termView is what the renderer knows of a terminal.
type termView struct {
	id      acp.TerminalID
	command string
	tail    *lineTail
	limit   uint64
	display bool   // run by the agent, shown through _meta (display.go)
	sandbox string // how the command was confined, "" when it was not
	where   string // the target it ran on (terminal.Info.Where), "" for here
	// endedAs is how a display terminal with no exit status ended: the
	// status of the tool call that ended it ("completed", "failed"), or
	// "unfinished" (or "cancelled") at the end of the turn.
	endedAs  string
	started  time.Time
	ended    time.Time
	status   *terminal.ExitStatus
	timedOut bool   // with status: the manager's timeout killed it
	lost     string // why the host lost touch with it (terminal.Event.Lost)
	released bool
}

// Bounds of the tool calls the text renderer remembers. A tool call ID is
// a short token; one longer than maxToolID is not shown (its view would
// keep it). A printed tool call's view is emptied, and only the newest
// maxPrintedTools are remembered, to keep their late updates from being
// printed again: an agent may start any number of tool calls in a turn.
const (
	maxToolID        = 1 << 10
	maxPrintedTools  = 4096
	maxToolTerminals = 16 // terminals shown in one tool call's block
)

// tool finds or makes the view of a tool call, to be updated; nil, for
// one whose block is printed already or whose ID is too long to keep,
// means the update is not shown. A tool call queued but not yet printed
// (waiting for its terminals) still takes updates to its content.
func (r *textRenderer) tool(id acp.ToolCallID) (*toolView, bool) {
	if tv := r.tools[id]; tv != nil {
		if tv.printed {
			return nil, false
		}
		return tv, false
	}
	if len(id) > maxToolID {
		return nil, false
	}
	tv := &toolView{id: id, title: textsafe.Line(string(id)), status: acp.ToolCallStatusPending, started: r.o.Now()}
	r.tools[id] = tv
	return tv, true
}

// toolPrinted empties the view of a tool call whose block was printed, and
// forgets the oldest printed ones past maxPrintedTools.
func (r *textRenderer) toolPrinted(tv *toolView) {
	tv.printed = true
	r.detach(tv)
	tv.texts, tv.moreTexts, tv.diffs, tv.terminals = nil, 0, nil, nil
	r.printedTools = append(r.printedTools, tv.id)
	if len(r.printedTools) > maxPrintedTools {
		delete(r.tools, r.printedTools[0])
		r.printedTools = r.printedTools[1:]
	}
}

func (r *textRenderer) setContent(tv *toolView, content []acp.ToolCallContent) {
	// Content replaces what was there, but a terminal stays attached: the
	// protocol asks agents to re-send it, and not all do.
	tv.texts, tv.moreTexts, tv.diffs = nil, 0, nil
	for _, c := range content {
		switch c := c.(type) {
		case *acp.Terminal:
			// Only a terminal the renderer has can be shown, and it has
			// every one by the time the agent can name it: terminal/create
			// answers once it does, and display terminals come first.
			// Unknown names are not kept, nor more than maxToolTerminals.
			id := c.TerminalID
			if r.terms[id] == nil || len(tv.terminals) >= maxToolTerminals || slices.Contains(tv.terminals, id) {
				continue
			}
			r.embedded[id] = true
			tv.terminals = append(tv.terminals, id)
		case *acp.Content:
			if s := textsafe.Text(ContentText(c.Content)); s != "" {
				for l := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
					if len(tv.texts) == r.o.TailLines {
						tv.moreTexts++
						continue
					}
					tv.texts = append(tv.texts, Clip(l, maxPartialLine))
				}
			}
		case *acp.Diff:
			tv.diffs = append(tv.diffs, textsafe.Line(c.Path))
		}
	}
}

// hasExit reports whether st says how a command ended: an exit code or a
// signal (a display terminal ended by its tool call has neither).
func hasExit(st *terminal.ExitStatus) bool {
	return st != nil && (st.ExitCode != nil || st.Signal != nil)
}

func toolDone(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed
}

func (r *textRenderer) toolChanged(tv *toolView, isNew bool) {
	if toolDone(tv.status) {
		// Its display terminals end with it: the agent said all it will
		// say of them (the adapter ended those it did not end).
		for _, id := range tv.terminals {
			if term := r.terms[id]; term != nil && term.display && term.endedAs == "" && !hasExit(term.status) {
				term.endedAs = string(tv.status)
			}
		}
	}
	if tv.queued {
		return
	}
	if toolDone(tv.status) {
		r.enqueueTool(tv)
		return
	}
	if isNew {
		r.active.push(tv)
		if r.unannounced == nil {
			r.unannounced = tv
		}
	}
}

// announce prints a line for each tool call that has run for a while,
// when there is no live region to show it. The running tool calls started
// in the order of r.active, so those not announced yet are its tail, from
// r.unannounced, and each has run no longer than the one before it: the
// first that is too young ends the search, and an update costs the same
// however many tool calls run.
func (r *textRenderer) announce(now time.Time) {
	if r.o.Live {
		return
	}
	for tv := r.unannounced; tv != nil && now.Sub(tv.started) >= r.o.AnnounceAfter; tv = tv.next {
		r.unannounced = tv.next
		r.push(itemNote, r.st.Dim("▸ "+tv.title+kindSuffix(tv.kind)+" (running)")+"\n")
	}
}

func (r *textRenderer) enqueueTool(tv *toolView) {
	tv.queued = true
	if r.active.has(tv) {
		if r.unannounced == tv {
			r.unannounced = tv.next
		}
		r.active.remove(tv)
	}
	if r.overflowing() {
		r.dropped.tools++
		r.toolPrinted(tv)
		return
	}
	r.queue = append(r.queue, &item{kind: itemBlock, tool: tv, since: r.o.Now()})
}

func kindSuffix(k acp.ToolKind) string {
	if k == "" || k == acp.ToolKindOther {
		return ""
	}
	return " [" + textsafe.Line(string(k)) + "]"
}

// ContentText is the text of a content block; other kinds get a short
// placeholder. It is the agent's text as it came: textsafe it before it
// is shown.
func ContentText(c acp.ContentBlock) string {
	switch c := c.(type) {
	case *acp.TextContent:
		return c.Text
	case *acp.ResourceLink:
		return "[" + c.Name + " " + c.URI + "]"
	case *acp.ImageContent:
		return "[image]"
	case *acp.AudioContent:
		return "[audio]"
	case *acp.EmbeddedResource:
		return "[resource]"
	}
	return ""
}
