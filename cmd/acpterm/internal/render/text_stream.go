package render

import (
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// Streamed text: the agent's messages and thoughts, cut into lines as
// they arrive, and plans.

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
		// Cut at a character start (utf8cut backs up at most a
		// character's length: the text may not be UTF-8 at all).
		head := utf8cut.Head(s, maxProseLine-len(r.partial))
		r.partial = append(r.partial, head...)
		r.pushLine()
		s = s[len(head):]
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
		r.push(itemProse, r.st.Dim("· "+line)+"\n")
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
	if r.overflowing() {
		r.dropped.bytes += len(text)
		return
	}
	r.queue = append(r.queue, &item{kind: kind, text: text})
	r.queuedProse += len(text)
}

// Bounds of the queue while a question is on the screen (Suspend): it
// is printed when the question is answered, and an agent may keep
// writing meanwhile. Past them, what comes is counted, not kept.
const (
	maxSuspendedProse = 4 << 20
	maxSuspendedItems = 4096
)

// droppedWhileAsking counts what was not kept while a question was open.
type droppedWhileAsking struct{ bytes, tools int }

// overflowing reports whether the queue is full while a question is open.
func (r *textRenderer) overflowing() bool {
	return r.suspended > 0 && (r.queuedProse >= maxSuspendedProse || len(r.queue) >= maxSuspendedItems)
}

// noteDropped queues a line saying what was not kept while a question was
// open, if anything.
func (r *textRenderer) noteDropped() {
	d := r.dropped
	if d == (droppedWhileAsking{}) {
		return
	}
	r.dropped = droppedWhileAsking{}
	text := r.st.Yellow(fmt.Sprintf("… while a question was open, the agent sent more than acpterm keeps: %s of messages and %d tool calls not shown", formatBytes(uint64(d.bytes)), d.tools)) + "\n"
	r.queue = append(r.queue, &item{kind: itemNote, text: text}) // past the bounds: it is one line
	r.queuedProse += len(text)
}

func (r *textRenderer) planText(entries []acp.PlanEntry) string {
	var b strings.Builder
	b.WriteString(r.st.Bold("Plan") + "\n")
	for _, e := range entries {
		content := textsafe.Line(e.Content)
		switch e.Status {
		case acp.PlanEntryStatusCompleted:
			b.WriteString("  " + r.st.Green("✓") + " " + content + r.st.Dim(" (completed)") + "\n")
		case acp.PlanEntryStatusInProgress:
			b.WriteString("  " + r.st.Yellow("▸") + " " + content + r.st.Dim(" (in progress)") + "\n")
		default:
			b.WriteString("  ○ " + content + r.st.Dim(" (pending)") + "\n")
		}
	}
	return b.String()
}
