package render

import (
	"slices"

	"github.com/acpterm/acpterm/acp"
)

// Terminals that the host ties to a tool call (terminal.Info.ToolCall,
// on a second EventCreated): acpterm run's MCP commands, which the agent
// says come from one of its tool calls through the MCP call's _meta, not
// by embedding the terminal. The ID is the agent's word: the terminal
// goes under that tool call only while the call is running and shown, as
// if the agent had embedded it; else it stays a terminal of its own. It
// cannot hide the command: a tool call printed while the terminal still
// runs lets go of it, and the terminal is shown on its own from then on
// (live, and at the end of the turn).

// attach shows terminal term under tool call id, if that call is running
// and has room, and no tool call shows the terminal already.
func (r *textRenderer) attach(term *termView, id acp.ToolCallID) {
	if r.embedded[term.id] {
		return
	}
	tv := r.tools[id]
	if tv == nil || tv.printed || tv.queued || len(tv.terminals) >= maxToolTerminals || slices.Contains(tv.terminals, term.id) {
		return
	}
	r.embedded[term.id], r.attached[term.id] = true, true
	tv.terminals = append(tv.terminals, term.id)
}

// tiedCommand is the line that names the command of a terminal tied to
// a tool call, under the call's title ("" for any other): the title is
// the agent's, and may say nothing of what runs, or something else.
func (r *textRenderer) tiedCommand(term *termView, width int) string {
	if !r.attached[term.id] {
		return ""
	}
	return r.st.Dim("  $ ") + clipColumns(term.command, width)
}

// detach lets go of the attached terminals of a tool call being printed
// that have not ended: they are shown on their own from then on.
func (r *textRenderer) detach(tv *toolView) {
	for _, id := range tv.terminals {
		if !r.attached[id] {
			continue
		}
		delete(r.attached, id)
		if t := r.terms[id]; t != nil && t.status == nil && t.lost == "" {
			delete(r.embedded, id)
		}
	}
}
