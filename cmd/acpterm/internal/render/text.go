package render

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// TextOptions configure the text renderer. Zero fields mean the defaults.
type TextOptions struct {
	// Color paints with ANSI colours (see ColorEnabled).
	Color bool
	// Live keeps a region at the bottom of the screen that is redrawn in
	// place: running tool calls with their elapsed time and the tail of
	// their terminals' output. Only for a TTY.
	Live bool
	// Size reports the screen's columns and rows (Live only); nil or
	// zeros mean 80×24.
	Size func() (cols, rows int)
	// LiveLines is how many lines of a running terminal the live region
	// shows (default 10).
	LiveLines int
	// TailLines is how many final lines of a terminal are printed under
	// its finished tool call (default 20).
	TailLines int
	// ExitWait bounds how long a finished tool call waits for the exit of
	// the terminals it embeds before it is printed anyway (default 2s).
	ExitWait time.Duration
	// AnnounceAfter is how long a tool call runs before a line announces
	// it, without a live region (default 1s); quick ones only get their
	// final block.
	AnnounceAfter time.Duration
	// Now is the clock (default time.Now).
	Now Clock
}

// textRenderer writes a turn for people. Everything printed goes through
// one ordered queue, so tool calls, messages and plans appear in the order
// the agent sent them; a finished tool call waits in the queue until its
// terminals' exit statuses are in (bounded by ExitWait). Running tool
// calls are shown in the live region (TTY) or announced with one line.
//
// Every string the agent controls goes through textsafe as it is taken in
// (titles, texts, paths, commands, plan entries) or as it is written
// (permission events, stop reasons, kinds), so that the only escape
// sequences written are the renderer's own: Style's SGR and the live
// region's cursor-up and erase.
type textRenderer struct {
	mu sync.Mutex
	w  io.Writer
	o  TextOptions
	st Style

	stream    streamKind // what the partial line belongs to
	partial   []byte
	tools     map[acp.ToolCallID]*toolView
	active    toolList // not yet queued, in arrival order
	terms     map[acp.TerminalID]*termView
	termOrder []*termView
	forgotten int                     // termOrder[:forgotten] have forgotten their lines (keepTails)
	keptTails int                     // terminals of termOrder that keep their lines
	embedded  map[acp.TerminalID]bool // terminal IDs referenced by a tool call
	// attached are the embedded terminals that the host tied to a tool
	// call (terminal.Info.ToolCall), not the agent (text_attach.go).
	attached map[acp.TerminalID]bool
	// printedTools are the IDs of the tool calls printed, oldest first:
	// their views are remembered (emptied) so that a late update does not
	// print them again, up to maxPrintedTools of them.
	printedTools []acp.ToolCallID
	queue        []*item
	// queuedProse is the size of the text items in queue.
	queuedProse int
	// unannounced is the first tool call of active not announced yet (see
	// announce), nil when there is none.
	unannounced *toolView

	drawn     int    // lines of the live region on screen
	lastLive  string // what they show
	lastKind  itemKind
	printed   bool
	suspended int
	dropped   droppedWhileAsking // while suspended, past the queue's bounds
	finished  bool

	sess textSession // session state, usage, the waiting line (session.go)
}

type streamKind int

const (
	streamNone streamKind = iota
	streamMessage
	streamThought
)

// item is one entry of the print queue: ready text, or a tool call or
// terminal block rendered when it is printed.
type item struct {
	text  string
	kind  itemKind
	tool  *toolView
	term  *termView
	since time.Time
}

// itemKind decides the spacing: a blank line separates the agent's prose
// from blocks (tool calls, plans), so that neither runs into the other.
type itemKind int

const (
	itemNote  itemKind = iota // a one-line notice
	itemProse                 // a line of a message or thought
	itemBlock                 // a tool call, terminal or plan
)

// NewText returns the renderer of --format text, writing to w.
func NewText(w io.Writer, o *TextOptions) Renderer {
	r := &textRenderer{w: w, tools: map[acp.ToolCallID]*toolView{}, terms: map[acp.TerminalID]*termView{}, embedded: map[acp.TerminalID]bool{},
		attached: map[acp.TerminalID]bool{}}
	if o != nil {
		r.o = *o
	}
	if r.o.LiveLines <= 0 {
		r.o.LiveLines = 10
	}
	if r.o.TailLines <= 0 {
		r.o.TailLines = 20
	}
	if r.o.ExitWait <= 0 {
		r.o.ExitWait = 2 * time.Second
	}
	if r.o.AnnounceAfter <= 0 {
		r.o.AnnounceAfter = time.Second
	}
	if r.o.Now == nil {
		r.o.Now = time.Now
	}
	r.st = Style{On: r.o.Color}
	return r
}

func (r *textRenderer) size() (cols, rows int) {
	if r.o.Size != nil {
		cols, rows = r.o.Size()
	}
	if cols <= 0 {
		cols = 80
	}
	if rows <= 0 {
		rows = 24
	}
	return cols, rows
}

// lineWidth is how many columns a line of command output may take.
func (r *textRenderer) lineWidth(indent int) int {
	if !r.o.Live {
		return 1000
	}
	cols, _ := r.size()
	return max(cols-1-indent, 10)
}

func (r *textRenderer) SessionUpdate(n *acp.SessionNotification, _ json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.sess.heard = r.o.Now()
	switch u := n.Update.(type) {
	case *acp.AgentMessageChunk:
		r.addText(streamMessage, ContentText(u.Content))
	case *acp.AgentThoughtChunk:
		r.addText(streamThought, ContentText(u.Content))
	case *acp.ToolCall:
		r.endText()
		tv, isNew := r.tool(u.ToolCallID)
		if tv == nil {
			break
		}
		if u.Title != "" { // else the ID stays the title
			tv.title = Clip(textsafe.Line(u.Title), maxShownCommand)
		}
		tv.kind, tv.status = u.Kind, u.Status
		if tv.status == "" {
			tv.status = acp.ToolCallStatusPending
		}
		r.setContent(tv, u.Content)
		r.toolChanged(tv, isNew)
	case *acp.ToolCallUpdate:
		r.endText()
		tv, isNew := r.tool(u.ToolCallID)
		if tv == nil {
			break
		}
		if u.Title != nil {
			tv.title = Clip(textsafe.Line(*u.Title), maxShownCommand)
		}
		if u.Kind != nil {
			tv.kind = *u.Kind
		}
		if u.Status != nil {
			tv.status = *u.Status
		}
		if u.Content != nil {
			r.setContent(tv, u.Content)
		}
		r.toolChanged(tv, isNew)
	case *acp.Plan:
		r.endText()
		r.push(itemBlock, r.planText(u.Entries))
	case *acp.AvailableCommandsUpdate:
		r.showCommands(u.AvailableCommands)
	case *acp.UsageUpdate:
		r.sess.usage = u
	case *acp.Notice:
		r.endText()
		r.push(itemNote, r.noticeLine(u))
	}
	r.flush(false)
}

// maxNotice bounds a notice as shown, in bytes.
const maxNotice = 2 << 10

// noticeLine is a notice (a v2 agent's warnings and news, which a v1
// agent sends as messages) on one line: its title, then its
// description.
func (r *textRenderer) noticeLine(u *acp.Notice) string {
	text := u.Title
	if u.Description != nil && *u.Description != "" {
		text += ": " + *u.Description
	}
	// One line: the description's line breaks are spaces.
	text = Clip(textsafe.Line(strings.ReplaceAll(text, "\n", " ")), maxNotice)
	switch u.Severity {
	case acp.NoticeSeverityError:
		return r.st.Red("✗ "+text) + "\n"
	case acp.NoticeSeverityWarning:
		return r.st.Yellow("⚠ "+text) + "\n"
	}
	return r.st.Dim("ℹ "+text) + "\n"
}

// Bounds of what the text renderer keeps of the terminals of a turn,
// which it prints when their tool call ends, or at the end of the turn
// for those no tool call showed. An agent may create and release
// terminals without end: each keeps at most a screen of lines, the
// newest maxKeptTails keep even that, and the command line of each is
// cut to maxShownCommand bytes (the permission question, not this
// summary, is where a command is shown whole).
const (
	maxKeptTails    = 128
	maxShownCommand = 1 << 10
)

// keepTails makes the oldest terminals forget their lines once more than
// maxKeptTails keep theirs: those already released first, as the live
// region shows only running ones.
func (r *textRenderer) keepTails() {
	for r.keptTails > maxKeptTails {
		victim := -1
		for i := r.forgotten; i < len(r.termOrder); i++ {
			if tv := r.termOrder[i]; !tv.tail.forgotten {
				if victim < 0 {
					victim = i // the oldest, should none be released
				}
				if tv.released || tv.status != nil {
					victim = i
					break
				}
			}
		}
		r.termOrder[victim].tail.forget()
		r.keptTails--
		for r.forgotten < len(r.termOrder) && r.termOrder[r.forgotten].tail.forgotten {
			r.forgotten++
		}
	}
}

func (r *textRenderer) TerminalEvent(ev terminal.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sess.heard = r.o.Now()
	tv := r.terms[ev.TerminalID]
	if tv == nil {
		if ev.Kind != terminal.EventCreated {
			return // created before we subscribed; nothing to attach it to
		}
		tv = &termView{id: ev.TerminalID, tail: newLineTail(max(r.o.LiveLines, r.o.TailLines)), started: r.o.Now()}
		if ev.Info != nil {
			tv.command = Clip(textsafe.Line(commandLine(ev.Info)), maxShownCommand)
			tv.limit, tv.display = ev.Info.OutputByteLimit, isDisplay(ev.Info)
			tv.sandbox = sandboxNote(ev.Info.Sandbox)
			tv.where = textsafe.Line(ev.Info.Where)
		}
		r.terms[ev.TerminalID] = tv
		r.termOrder = append(r.termOrder, tv)
		r.keptTails++
		r.keepTails()
	} else if ev.Kind == terminal.EventCreated && !tv.display && ev.Info != nil && ev.Info.ToolCall != "" {
		r.attach(tv, ev.Info.ToolCall)
	} else if ev.Kind == terminal.EventCreated && tv.display && ev.Info != nil {
		// A display terminal's command, known at last (displayUpdated).
		tv.command = Clip(textsafe.Line(commandLine(ev.Info)), maxShownCommand)
		tv.sandbox = sandboxNote(ev.Info.Sandbox)
	}
	switch ev.Kind {
	case terminal.EventOutput:
		tv.tail.Skip(ev.Dropped)
		tv.tail.Write(ev.Data)
		return // the live region catches up on the next tick
	case terminal.EventExited:
		if tv.status == nil && tv.lost == "" {
			tv.status, tv.timedOut, tv.lost, tv.ended = ev.Status, ev.TimedOut, ev.Lost, r.o.Now()
		}
	case terminal.EventReleased:
		tv.released = true
		if tv.status == nil && tv.lost == "" && (ev.Status != nil || ev.Lost != "") {
			tv.status, tv.timedOut, tv.lost, tv.ended = ev.Status, ev.TimedOut, ev.Lost, r.o.Now()
		}
	}
	if !r.finished {
		r.flush(false)
	}
}

func (r *textRenderer) Permission(p PermissionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.sess.heard = r.o.Now()
	what := textsafe.Line(p.Title)
	if p.TerminalCommand != "" {
		what = "run " + textsafe.Line(p.TerminalCommand)
	}
	reason := ""
	if p.Reason != "" {
		reason = r.st.Dim(" (" + textsafe.Line(p.Reason) + ")")
	}
	switch {
	case p.Decision == "cancelled":
		r.endText()
		r.push(itemNote, r.st.Yellow("⊘ permission cancelled: ")+what+reason+"\n")
	case strings.HasPrefix(p.Decision, "reject"):
		r.endText()
		r.push(itemNote, r.st.Red("✗ permission denied: ")+what+reason+"\n")
	case strings.HasPrefix(p.Decision, "allow") && p.TerminalCommand == "" && p.ToolCallID != "" && r.tools[p.ToolCallID] == nil:
		// A call the agent asks about before it reports it (Gemini CLI
		// reports one only once it has ended) is shown from the yes on,
		// running, under the request's title, so that what it runs meanwhile
		// shows under it.
		r.endText()
		tv, isNew := r.tool(p.ToolCallID)
		if tv == nil {
			return
		}
		if p.Title != "" {
			tv.title = Clip(textsafe.Line(p.Title), maxShownCommand)
		}
		tv.status = acp.ToolCallStatusInProgress
		r.toolChanged(tv, isNew)
	default:
		return // allowing is what the user expects; the tool call shows it
	}
	r.flush(false)
}

func (r *textRenderer) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finished {
		r.flush(false)
	}
}

func (r *textRenderer) Suspend() func() {
	if !r.o.Live {
		// No live region, and no lock to wait for: a write to a stdout
		// nobody reads holds it, and a warning on stderr must not wait.
		return func() {}
	}
	r.mu.Lock()
	r.suspended++
	r.clearLive()
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.suspended--
			if r.suspended == 0 {
				r.noteDropped()
			}
			if !r.finished {
				r.flush(false)
			}
		})
	}
}

func (r *textRenderer) Finish(reason acp.StopReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.endText()
	// A command the agent ran itself that nothing ended by now will not be
	// heard of again: it did not finish, as far as anyone can tell.
	for _, tv := range r.termOrder {
		if tv.display && tv.status == nil && tv.endedAs == "" {
			tv.endedAs = "unfinished"
			if reason == acp.StopReasonCancelled {
				tv.endedAs = "cancelled"
			}
		}
	}
	for tv := r.active.head; tv != nil; {
		next := tv.next // enqueueTool unlinks tv
		tv.cancelled = reason == acp.StopReasonCancelled
		r.enqueueTool(tv)
		tv = next
	}
	// Terminals no tool call showed: a headless client is the only place
	// their output can be seen.
	for _, tv := range r.termOrder {
		if !r.embedded[tv.id] {
			r.queue = append(r.queue, &item{kind: itemBlock, term: tv})
		}
	}
	if line := r.usageLine(); line != "" {
		r.push(itemNote, line)
	}
	switch reason {
	case "", acp.StopReasonEndTurn:
	case acp.StopReasonCancelled:
		r.push(itemBlock, r.st.Yellow("⊘ turn cancelled")+"\n")
	case acp.StopReasonRefusal:
		r.push(itemBlock, r.st.Red("✗ the agent refused to continue (stop reason: refusal)")+"\n")
	case acp.StopReasonMaxTokens:
		r.push(itemBlock, r.st.Red("✗ the agent ran out of tokens (stop reason: max_tokens)")+"\n")
	case acp.StopReasonMaxTurnRequests:
		r.push(itemBlock, r.st.Red("✗ the agent reached its request limit for a turn (stop reason: max_turn_requests)")+"\n")
	default:
		r.push(itemBlock, r.st.Red("✗ turn ended: "+textsafe.Line(string(reason)))+"\n")
	}
	r.noteDropped()
	r.finished = true // no live region from now on
	r.flush(true)
	r.paint("")
}

func (r *textRenderer) Error(string, int) {}
