package render

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Painting: the print queue flushed above the live region, and the live
// region itself, redrawn in place on a TTY.

func (r *textRenderer) clearLive() {
	if r.drawn > 0 {
		_, _ = fmt.Fprintf(r.w, "\x1b[%dA\r\x1b[J", r.drawn)
	}
	r.drawn, r.lastLive = 0, ""
}

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
			r.toolPrinted(it.tool)
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
// tool call shows (yet), as many lines as fit on the screen; the rest are
// not even looked at, so that a redraw costs the same however many run.
func (r *textRenderer) liveText(now time.Time) string {
	cols, rows := r.size()
	room := max(rows-1, 1)
	var lines []string
	header := func(title string, since time.Time) string {
		el := max(now.Sub(since), 0)
		frame := spinner[int(el/(100*time.Millisecond))%len(spinner)]
		elapsed := formatElapsed(el)
		// One column spare: writing the last one makes some terminals wrap.
		room := cols - 1 - len(" ") - len(" ") - 1 - len(elapsed)
		return r.st.Yellow(frame) + " " + clipColumns(title, max(room, 1)) + " " + r.st.Dim(elapsed)
	}
	body := func(tv *termView) {
		if tv == nil {
			return
		}
		tail, _ := tv.tail.Tail(r.o.LiveLines)
		for _, l := range tail {
			lines = append(lines, r.st.Dim("  │ ")+clipColumns(l, cols-5))
		}
	}
	for tv := r.active.head; tv != nil && len(lines) < room; tv = tv.next {
		lines = append(lines, header(tv.title+kindSuffix(tv.kind), tv.started))
		for _, id := range tv.terminals {
			if t := r.terms[id]; t != nil {
				if line := r.tiedCommand(t, cols-5); line != "" {
					lines = append(lines, line)
				}
			}
			body(r.terms[id])
		}
	}
	for _, tv := range r.termOrder {
		if len(lines) >= room {
			break
		}
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
	if len(lines) > room {
		lines = lines[:room]
	}
	return strings.Join(lines, "\n") + "\n"
}
