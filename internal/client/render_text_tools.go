package client

import (
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/textsafe"
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
	terminals []string
	texts     []string
	diffs     []string
	started   time.Time
	queued    bool
	announced bool // a "running" line was printed (no live region)
	cancelled bool // unfinished when the turn was cancelled
}

// termView is what the renderer knows of a terminal.
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
