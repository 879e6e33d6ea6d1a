package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
)

// Blocks printed once a tool call or terminal is over: its status, the
// tail of its output and how it ended.

// toolBlock is a tool call as printed once it is over: its status, title
// and kind, then for each terminal the tail of its output and how it ended.
func (r *textRenderer) toolBlock(tv *toolView, now time.Time) string {
	var b strings.Builder
	var mark string
	switch {
	case tv.status == acp.ToolCallStatusCompleted:
		mark = r.st.Green("✓")
	case tv.status == acp.ToolCallStatusFailed:
		mark = r.st.Red("✗")
	case tv.cancelled:
		mark = r.st.Yellow("⊘")
	default:
		mark = r.st.Yellow("…")
	}
	b.WriteString(mark + " " + r.st.Bold(tv.title) + r.st.Dim(kindSuffix(tv.kind)))
	if !toolDone(tv.status) {
		if tv.cancelled {
			b.WriteString(r.st.Dim(" (cancelled)"))
		} else {
			b.WriteString(r.st.Dim(" (unfinished)"))
		}
	}
	b.WriteString("\n")
	// An agent may add a command's output as text beside its terminal, for
	// clients that show no terminal (display.RunCommand does); when
	// acpterm ran the terminal, or the agent's display terminal has output
	// (its own, or this text: display_gaps.go), its tail is printed below, and
	// the text would print the output twice.
	texts, more := tv.texts, tv.moreTexts
	for _, id := range tv.terminals {
		if t := r.terms[id]; t != nil && (!t.display || t.tail.bytes > 0) {
			texts, more = nil, 0
			break
		}
	}
	for _, l := range texts {
		b.WriteString(r.st.Dim("  │ ") + clipColumns(l, r.lineWidth(4)) + "\n")
	}
	if more > 0 {
		b.WriteString(r.st.Dim(fmt.Sprintf("  │ … %d more lines", more)) + "\n")
	}
	for _, p := range tv.diffs {
		b.WriteString(r.st.Dim("  │ edit ") + p + "\n")
	}
	for _, id := range tv.terminals {
		if term := r.terms[id]; term != nil {
			if line := r.tiedCommand(term, r.lineWidth(4)); line != "" {
				b.WriteString(line + "\n")
			}
			r.writeTerminal(&b, term, now)
		}
	}
	return b.String()
}

// termBlock is a terminal no tool call embedded.
func (r *textRenderer) termBlock(tv *termView, now time.Time) string {
	var b strings.Builder
	b.WriteString(r.st.Bold("$ "+tv.command) + "\n")
	r.writeTerminal(&b, tv, now)
	return b.String()
}

func (r *textRenderer) writeTerminal(b *strings.Builder, tv *termView, now time.Time) {
	lines, above := tv.tail.Tail(r.o.TailLines)
	if tv.tail.forgotten {
		fmt.Fprintf(b, "%s\n", r.st.Dim(fmt.Sprintf("  │ … %d lines, not kept: more than %d terminals this turn", above, maxKeptTails)))
	} else if above > 0 {
		fmt.Fprintf(b, "%s\n", r.st.Dim(fmt.Sprintf("  │ … %d lines above", above)))
	}
	for _, l := range lines {
		b.WriteString(r.st.Dim("  │ ") + clipColumns(l, r.lineWidth(4)) + "\n")
	}
	end := tv.ended
	if tv.status == nil && tv.lost == "" {
		end = now
	}
	status := statusText(tv.status, tv.timedOut)
	switch {
	case tv.lost != "":
		// Its end was not heard: why, in place of an exit status.
		status = r.st.Red(textsafe.Line(tv.lost))
	case tv.display && !hasExit(tv.status) && tv.endedAs != "":
		// No exit status came: how its tool call ended says it.
		status = textsafe.Line(tv.endedAs)
		if tv.endedAs == string(acp.ToolCallStatusCompleted) {
			status = r.st.Green(status)
		} else {
			status = r.st.Red(status)
		}
	case statusFailed(tv.status, tv.timedOut):
		status = r.st.Red(status)
	case tv.status != nil:
		status = r.st.Green(status)
	}
	notes := " · " + formatDuration(end.Sub(tv.started))
	if !tv.display && tv.tail.bytes > tv.limit {
		notes += fmt.Sprintf(" · output truncated: the agent saw only the last %s", formatBytes(tv.limit))
	}
	if tv.tail.skipped > 0 {
		notes += fmt.Sprintf(" · %s not shown here (display fell behind)", formatBytes(tv.tail.skipped))
	}
	if tv.where != "" {
		notes += " · on " + tv.where
	}
	switch {
	case tv.display && tv.sandbox != "":
		notes += " · run by the agent, " + tv.sandbox
	case tv.display:
		notes += " · run by the agent"
	case tv.sandbox != "":
		notes += " · " + tv.sandbox
	}
	b.WriteString(r.st.Dim("  └ ") + status + r.st.Dim(notes) + "\n")
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
	switch a.Network {
	case sandbox.DenyNetwork:
		parts = append(parts, "network denied")
	case sandbox.ProxyNetwork:
		parts = append(parts, fmt.Sprintf("network limited to %d hosts", len(a.AllowHosts)))
	}
	note := "sandbox: " + strings.Join(parts, ", ")
	if len(a.Missing) > 0 {
		// Best effort: the kernel's messages, not the agent's, but kept
		// to one line all the same.
		note += " (partial: " + textsafe.Line(strings.Join(a.Missing, "; ")) + ")"
	}
	return note
}
