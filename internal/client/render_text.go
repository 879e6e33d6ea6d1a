package client

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/textsafe"
	"github.com/acpterm/acpterm/sandbox"
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
// sequences written are the renderer's own: style's SGR and the live
// region's cursor-up and erase.
type textRenderer struct {
	mu sync.Mutex
	w  io.Writer
	o  TextOptions
	st style

	stream    streamKind // what the partial line belongs to
	partial   []byte
	tools     map[acp.ToolCallID]*toolView
	active    []*toolView // not yet queued, in arrival order
	terms     map[string]*termView
	termOrder []*termView
	embedded  map[string]bool // terminal IDs referenced by a tool call
	queue     []*item
	// queuedProse is the size of the text items in queue.
	queuedProse int

	drawn     int    // lines of the live region on screen
	lastLive  string // what they show
	lastKind  itemKind
	printed   bool
	suspended int
	finished  bool

	sess textSession // session state, usage, the waiting line (session_config_render.go)
}

type streamKind int

const (
	streamNone streamKind = iota
	streamMessage
	streamThought
)

type toolView struct {
	id        acp.ToolCallID
	title     string
	kind      acp.ToolKind
	status    acp.ToolCallStatus
	terminals []string
	texts     []string
	diffs     []string
	started   time.Time
	queued    bool
	announced bool // a "running" line was printed (no live region)
	cancelled bool // unfinished when the turn was cancelled
}

type termView struct {
	id       string
	command  string
	tail     *lineTail
	limit    uint64
	display  bool   // run by the agent, shown through _meta (display.go)
	sandbox  string // how the command was confined, "" when it was not
	started  time.Time
	ended    time.Time
	status   *terminal.ExitStatus
	released bool
}

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

// NewTextRenderer returns the renderer of --format text, writing to w.
func NewTextRenderer(w io.Writer, o *TextOptions) Renderer {
	r := &textRenderer{w: w, tools: map[acp.ToolCallID]*toolView{}, terms: map[string]*termView{}, embedded: map[string]bool{}}
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
	r.st = style{on: r.o.Color}
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
		r.addText(streamMessage, contentText(u.Content))
	case *acp.AgentThoughtChunk:
		r.addText(streamThought, contentText(u.Content))
	case *acp.ToolCall:
		r.endText()
		tv, isNew := r.tool(u.ToolCallID)
		if u.Title != "" { // else the ID stays the title
			tv.title = textsafe.Line(u.Title)
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
		if u.Title != nil {
			tv.title = textsafe.Line(*u.Title)
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
	}
	r.flush(false)
}

// tool finds or makes the view of a tool call.
func (r *textRenderer) tool(id acp.ToolCallID) (*toolView, bool) {
	if tv := r.tools[id]; tv != nil {
		return tv, false
	}
	tv := &toolView{id: id, title: textsafe.Line(string(id)), status: acp.ToolCallStatusPending, started: r.o.Now()}
	r.tools[id] = tv
	return tv, true
}

func (r *textRenderer) setContent(tv *toolView, content []acp.ToolCallContent) {
	// Content replaces what was there, but a terminal stays attached: the
	// protocol asks agents to re-send it, and not all do.
	tv.texts, tv.diffs = nil, nil
	for _, c := range content {
		switch c := c.(type) {
		case *acp.Terminal:
			id := string(c.TerminalID)
			r.embedded[id] = true
			if !contains(tv.terminals, id) {
				tv.terminals = append(tv.terminals, id)
			}
		case *acp.Content:
			if s := textsafe.Text(contentText(c.Content)); s != "" {
				tv.texts = append(tv.texts, strings.Split(strings.TrimRight(s, "\n"), "\n")...)
			}
		case *acp.Diff:
			tv.diffs = append(tv.diffs, textsafe.Line(c.Path))
		}
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func toolDone(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed
}

func (r *textRenderer) toolChanged(tv *toolView, isNew bool) {
	if tv.queued {
		return
	}
	if toolDone(tv.status) {
		r.enqueueTool(tv)
		return
	}
	if isNew {
		r.active = append(r.active, tv)
	}
}

// announce prints a line for each tool call that has run for a while,
// when there is no live region to show it.
func (r *textRenderer) announce(now time.Time) {
	if r.o.Live {
		return
	}
	for _, tv := range r.active {
		if !tv.announced && now.Sub(tv.started) >= r.o.AnnounceAfter {
			tv.announced = true
			r.push(itemNote, r.st.dim("▸ "+tv.title+kindSuffix(tv.kind)+" (running)")+"\n")
		}
	}
}

func (r *textRenderer) enqueueTool(tv *toolView) {
	tv.queued = true
	for i, a := range r.active {
		if a == tv {
			r.active = append(r.active[:i:i], r.active[i+1:]...)
			break
		}
	}
	r.queue = append(r.queue, &item{kind: itemBlock, tool: tv, since: r.o.Now()})
}

func kindSuffix(k acp.ToolKind) string {
	if k == "" || k == acp.ToolKindOther {
		return ""
	}
	return " [" + textsafe.Line(string(k)) + "]"
}

// contentText is the text of a content block; other kinds get a short
// placeholder.
func contentText(c acp.ContentBlock) string {
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

// addText adds streamed message or thought text; complete lines are queued.
func (r *textRenderer) addText(kind streamKind, s string) {
	if s == "" {
		return
	}
	if r.stream != kind {
		r.endText()
		r.stream = kind
	}
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			r.addPartial(s)
			return
		}
		r.addPartial(s[:i])
		r.pushLine()
		s = s[i+1:]
	}
}

// maxProseLine bounds the text held for a line of a message that has not
// ended: a longer one is shown in pieces of this size, so an agent that
// streams megabytes without a newline costs this much memory, not its
// whole line.
const maxProseLine = 64 << 10

// addPartial adds text without a newline to the partial line, breaking it
// at a character start whenever it reaches maxProseLine.
func (r *textRenderer) addPartial(s string) {
	for len(r.partial)+len(s) > maxProseLine {
		k := maxProseLine - len(r.partial)
		// Back up to a character start, at most a character's length (the
		// text may not be UTF-8 at all).
		for j := 0; j < utf8.UTFMax-1 && k > 0 && !utf8.RuneStart(s[k]); j++ {
			k--
		}
		r.partial = append(r.partial, s[:k]...)
		r.pushLine()
		s = s[k:]
	}
	r.partial = append(r.partial, s...)
}

// endText ends a partial line of text, if any.
func (r *textRenderer) endText() {
	if len(r.partial) > 0 {
		r.pushLine()
	}
	r.stream = streamNone
}

func (r *textRenderer) pushLine() {
	// A line of a message may hold anything but a newline; a CR before
	// one is a CRLF line end.
	if r.stream == streamThought {
		line := textsafe.Text(strings.TrimSuffix(string(r.partial), "\r"))
		r.partial = r.partial[:0]
		r.push(itemProse, r.st.dim("· "+line)+"\n")
		return
	}
	// Text drops the CR of a CRLF; with the newline added first, the
	// line is copied once (Text returns plain text as it is).
	r.partial = append(r.partial, '\n')
	line := textsafe.Text(string(r.partial))
	r.partial = r.partial[:0]
	r.push(itemProse, line)
	if r.queuedProse >= maxQueuedProse {
		// A message of megabytes is written as it comes, not gathered.
		r.flush(false)
	}
}

// maxQueuedProse is how many bytes of message text may wait in the queue
// before SessionUpdate's own flush.
const maxQueuedProse = 256 << 10

func (r *textRenderer) push(kind itemKind, text string) {
	r.queue = append(r.queue, &item{kind: kind, text: text})
	r.queuedProse += len(text)
}

func (r *textRenderer) planText(entries []acp.PlanEntry) string {
	var b strings.Builder
	b.WriteString(r.st.bold("Plan") + "\n")
	for _, e := range entries {
		content := textsafe.Line(e.Content)
		switch e.Status {
		case acp.PlanEntryStatusCompleted:
			b.WriteString("  " + r.st.green("✓") + " " + content + r.st.dim(" (completed)") + "\n")
		case acp.PlanEntryStatusInProgress:
			b.WriteString("  " + r.st.yellow("▸") + " " + content + r.st.dim(" (in progress)") + "\n")
		default:
			b.WriteString("  ○ " + content + r.st.dim(" (pending)") + "\n")
		}
	}
	return b.String()
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
			tv.command, tv.limit, tv.display = textsafe.Line(commandLine(ev.Info)), ev.Info.OutputByteLimit, isDisplay(ev.Info)
			tv.sandbox = sandboxNote(ev.Info.Sandbox)
		}
		r.terms[ev.TerminalID] = tv
		r.termOrder = append(r.termOrder, tv)
	}
	switch ev.Kind {
	case terminal.EventOutput:
		tv.tail.Skip(ev.Dropped)
		tv.tail.Write(ev.Data)
		return // the live region catches up on the next tick
	case terminal.EventExited:
		if tv.status == nil {
			tv.status, tv.ended = ev.Status, r.o.Now()
		}
	case terminal.EventReleased:
		tv.released = true
		if tv.status == nil && ev.Status != nil {
			tv.status, tv.ended = ev.Status, r.o.Now()
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
		reason = r.st.dim(" (" + textsafe.Line(p.Reason) + ")")
	}
	switch {
	case p.Decision == "cancelled":
		r.endText()
		r.push(itemNote, r.st.yellow("⊘ permission cancelled: ")+what+reason+"\n")
	case strings.HasPrefix(p.Decision, "reject"):
		r.endText()
		r.push(itemNote, r.st.red("✗ permission denied: ")+what+reason+"\n")
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
			if !r.finished {
				r.flush(false)
			}
		})
	}
}

func (r *textRenderer) clearLive() {
	if r.drawn > 0 {
		_, _ = fmt.Fprintf(r.w, "\x1b[%dA\r\x1b[J", r.drawn)
	}
	r.drawn, r.lastLive = 0, ""
}

func (r *textRenderer) Finish(reason acp.StopReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.endText()
	for _, tv := range append([]*toolView(nil), r.active...) {
		tv.cancelled = reason == acp.StopReasonCancelled
		r.enqueueTool(tv)
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
		r.push(itemBlock, r.st.yellow("⊘ turn cancelled")+"\n")
	case acp.StopReasonRefusal:
		r.push(itemBlock, r.st.red("✗ the agent refused to continue (stop reason: refusal)")+"\n")
	case acp.StopReasonMaxTokens:
		r.push(itemBlock, r.st.red("✗ the agent ran out of tokens (stop reason: max_tokens)")+"\n")
	case acp.StopReasonMaxTurnRequests:
		r.push(itemBlock, r.st.red("✗ the agent reached its request limit for a turn (stop reason: max_turn_requests)")+"\n")
	default:
		r.push(itemBlock, r.st.red("✗ turn ended: "+textsafe.Line(string(reason)))+"\n")
	}
	r.finished = true // no live region from now on
	r.flush(true)
	r.paint("")
}

func (r *textRenderer) Error(string, int) {}

// flush prints the ready items at the head of the queue (all of them when
// force) and redraws the live region.
func (r *textRenderer) flush(force bool) {
	if r.suspended > 0 && !force {
		return
	}
	var b strings.Builder
	b.Grow(r.queuedProse) // most of what is queued, in one allocation
	now := r.o.Now()
	r.announce(now)
	for len(r.queue) > 0 {
		it := r.queue[0]
		if !force && !r.ready(it, now) {
			break
		}
		r.queue = r.queue[1:]
		r.queuedProse -= len(it.text)
		if r.printed && it.kind != itemNote && r.lastKind != itemNote && (it.kind != r.lastKind || it.kind == itemBlock && it.tool == nil) {
			b.WriteString("\n")
		}
		r.printed, r.lastKind = true, it.kind
		switch {
		case it.tool != nil:
			b.WriteString(r.toolBlock(it.tool, now))
		case it.term != nil:
			b.WriteString(r.termBlock(it.term, now))
		default:
			b.WriteString(it.text)
		}
	}
	r.paint(b.String())
}

func (r *textRenderer) ready(it *item, now time.Time) bool {
	if it.tool == nil {
		return true
	}
	if now.Sub(it.since) >= r.o.ExitWait {
		return true
	}
	for _, id := range it.tool.terminals {
		if tv := r.terms[id]; tv == nil || tv.status == nil {
			return false
		}
	}
	return true
}

// paint writes committed text above the live region and redraws the
// region, in one write so that the screen never shows half a frame.
func (r *textRenderer) paint(committed string) {
	live := ""
	if r.o.Live && r.suspended == 0 && !r.finished {
		live = r.liveText(r.o.Now())
	}
	if committed == "" && live == r.lastLive {
		return
	}
	if r.drawn == 0 && live == "" {
		r.lastLive = ""
		_, _ = io.WriteString(r.w, committed) // nothing to redraw: no copy
		return
	}
	var b strings.Builder
	if r.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", r.drawn)
	}
	b.WriteString(committed)
	b.WriteString(live)
	r.drawn, r.lastLive = strings.Count(live, "\n"), live
	_, _ = io.WriteString(r.w, b.String())
}

// unembeddedDelay is how long a running terminal that no tool call shows
// waits before the live region shows it by itself.
const unembeddedDelay = 500 * time.Millisecond

// formatElapsed is a running time at the live region's resolution.
func formatElapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return formatDuration(d)
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// liveText is the live region: each running tool call with its elapsed
// time and the last lines of its terminals, then running terminals that no
// tool call shows (yet).
func (r *textRenderer) liveText(now time.Time) string {
	cols, rows := r.size()
	var lines []string
	header := func(title string, since time.Time) string {
		el := max(now.Sub(since), 0)
		frame := spinner[int(el/(100*time.Millisecond))%len(spinner)]
		elapsed := formatElapsed(el)
		// One column spare: writing the last one makes some terminals wrap.
		room := cols - 1 - len(" ") - len(" ") - 1 - len(elapsed)
		return r.st.yellow(frame) + " " + clip(title, max(room, 1)) + " " + r.st.dim(elapsed)
	}
	body := func(tv *termView) {
		if tv == nil {
			return
		}
		tail, _ := tv.tail.Tail(r.o.LiveLines)
		for _, l := range tail {
			lines = append(lines, r.st.dim("  │ ")+clip(l, cols-5))
		}
	}
	for _, tv := range r.active {
		lines = append(lines, header(tv.title+kindSuffix(tv.kind), tv.started))
		for _, id := range tv.terminals {
			body(r.terms[id])
		}
	}
	for _, tv := range r.termOrder {
		// A terminal is normally embedded right after it is created: give
		// the tool call a moment before showing the terminal on its own.
		if r.embedded[tv.id] || tv.status != nil || tv.released || now.Sub(tv.started) < unembeddedDelay {
			continue
		}
		lines = append(lines, header("$ "+tv.command, tv.started))
		body(tv)
	}
	if len(lines) == 0 {
		// Nothing running to show: say that acpterm waits for the agent,
		// once it has been silent for a moment.
		if w := r.waitingLine(now, cols); w != "" {
			lines = append(lines, w)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > rows-1 {
		lines = lines[:max(rows-1, 1)]
	}
	return strings.Join(lines, "\n") + "\n"
}

// toolBlock is a tool call as printed once it is over: its status, title
// and kind, then for each terminal the tail of its output and how it ended.
func (r *textRenderer) toolBlock(tv *toolView, now time.Time) string {
	var b strings.Builder
	var mark string
	switch {
	case tv.status == acp.ToolCallStatusCompleted:
		mark = r.st.green("✓")
	case tv.status == acp.ToolCallStatusFailed:
		mark = r.st.red("✗")
	case tv.cancelled:
		mark = r.st.yellow("⊘")
	default:
		mark = r.st.yellow("…")
	}
	b.WriteString(mark + " " + r.st.bold(tv.title) + r.st.dim(kindSuffix(tv.kind)))
	if !toolDone(tv.status) {
		if tv.cancelled {
			b.WriteString(r.st.dim(" (cancelled)"))
		} else {
			b.WriteString(r.st.dim(" (unfinished)"))
		}
	}
	b.WriteString("\n")
	// An agent may add a command's output as text beside its terminal, for
	// clients that show no terminal (acp.AgentConn.RunCommand does); when
	// acpterm ran the terminal its tail is printed below, and the text
	// would print the output twice.
	texts := tv.texts
	for _, id := range tv.terminals {
		if r.terms[id] != nil {
			texts = nil
			break
		}
	}
	for i, l := range texts {
		if i == r.o.TailLines {
			b.WriteString(r.st.dim(fmt.Sprintf("  │ … %d more lines", len(texts)-i)) + "\n")
			break
		}
		b.WriteString(r.st.dim("  │ ") + clip(l, r.lineWidth(4)) + "\n")
	}
	for _, p := range tv.diffs {
		b.WriteString(r.st.dim("  │ edit ") + p + "\n")
	}
	for _, id := range tv.terminals {
		if term := r.terms[id]; term != nil {
			r.writeTerminal(&b, term, now)
		}
	}
	return b.String()
}

// termBlock is a terminal no tool call embedded.
func (r *textRenderer) termBlock(tv *termView, now time.Time) string {
	var b strings.Builder
	b.WriteString(r.st.bold("$ "+tv.command) + "\n")
	r.writeTerminal(&b, tv, now)
	return b.String()
}

func (r *textRenderer) writeTerminal(b *strings.Builder, tv *termView, now time.Time) {
	lines, above := tv.tail.Tail(r.o.TailLines)
	if above > 0 {
		fmt.Fprintf(b, "%s\n", r.st.dim(fmt.Sprintf("  │ … %d lines above", above)))
	}
	for _, l := range lines {
		b.WriteString(r.st.dim("  │ ") + clip(l, r.lineWidth(4)) + "\n")
	}
	end := tv.ended
	if tv.status == nil {
		end = now
	}
	status := statusText(tv.status)
	if statusFailed(tv.status) {
		status = r.st.red(status)
	} else if tv.status != nil {
		status = r.st.green(status)
	}
	notes := " · " + formatDuration(end.Sub(tv.started))
	if !tv.display && tv.tail.bytes > tv.limit {
		notes += fmt.Sprintf(" · output truncated: the agent saw only the last %s", formatBytes(tv.limit))
	}
	if tv.tail.skipped > 0 {
		notes += fmt.Sprintf(" · %s not shown here (display fell behind)", formatBytes(tv.tail.skipped))
	}
	if tv.sandbox != "" {
		notes += " · " + tv.sandbox
	}
	b.WriteString(r.st.dim("  └ ") + status + r.st.dim(notes) + "\n")
}

// sandboxNote says in a few words how a command was confined
// ("sandbox: workspace-write, network denied"); "" when it was not.
func sandboxNote(a *sandbox.Applied) string {
	if a == nil || (a.Mode == sandbox.Off && a.Network == sandbox.AllowNetwork) {
		return ""
	}
	var parts []string
	if a.Mode != sandbox.Off {
		parts = append(parts, a.Mode.String())
	}
	if a.Network == sandbox.DenyNetwork {
		parts = append(parts, "network denied")
	}
	note := "sandbox: " + strings.Join(parts, ", ")
	if len(a.Missing) > 0 {
		// Best effort: the kernel's messages, not the agent's, but kept
		// to one line all the same.
		note += " (partial: " + textsafe.Line(strings.Join(a.Missing, "; ")) + ")"
	}
	return note
}
