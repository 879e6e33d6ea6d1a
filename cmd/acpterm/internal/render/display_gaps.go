package render

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// Real agents leave gaps the adapter fills from the tool call that
// carries the terminal (ACP-NOTES §12):
//
//   - codex sends no terminal_output for a quick command: the output is
//     only in the final update's rawOutput (formatted_output,
//     aggregated_output, stdout). When a tool call ends and its display
//     terminal got no output, the first of those that is a string, or
//     else the tool call's text content (claude's error text), becomes its
//     output, clipped to its last maxFallbackOutput bytes.
//   - claude ends a failed command with status: failed and no
//     terminal_exit. A tool call that ends (completed or failed) ends its
//     display terminals that have not exited, with no exit status; the
//     renderers show the tool call's status for it.
//   - claude announces its terminal before the command is known (title
//     "Terminal", empty rawInput) and brings the command on a later
//     update. A display terminal's command and cwd follow the tool call's
//     rawInput (command, as a line or an argv, and cwd) or, failing that,
//     its title: a second created event for the same id, which the
//     renderers take as an update (displayUpdated).

// displayInput is the part of a tool call's rawInput that names the
// command it runs: a shell line (claude, qwen) or an argv (codex), and the
// directory.
type displayInput struct {
	Command json.RawMessage `json:"command"`
	Cwd     string          `json:"cwd"`
}

// commandOf reads the command of a rawInput: a line, or an argv whose
// first word is the program; ok is false when there is none.
func commandOf(rawInput json.RawMessage) (command string, args []string, cwd string, ok bool) {
	var in displayInput
	if len(rawInput) == 0 || json.Unmarshal(rawInput, &in) != nil {
		return "", nil, "", false
	}
	if !filepath.IsAbs(in.Cwd) {
		in.Cwd = ""
	}
	var line string
	if json.Unmarshal(in.Command, &line) == nil && line != "" {
		return line, nil, in.Cwd, true
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) == nil && len(argv) > 0 && argv[0] != "" {
		if len(argv) > maxToolTerminals*4 {
			argv = argv[:maxToolTerminals*4]
		}
		return argv[0], argv[1:], in.Cwd, true
	}
	return "", nil, in.Cwd, in.Cwd != ""
}

// fromCall notes which display terminals the tool call embeds, and
// updates their command and cwd from its rawInput or title.
func (d *DisplayTerminals) fromCall(sessionID acp.SessionID, c *callUpdate) {
	d.mu.Lock()
	ids := d.calls[c.id]
	for _, tc := range c.content {
		if t, ok := tc.(*acp.Terminal); ok {
			id := t.TerminalID
			if d.known[id] != nil && len(ids) < maxToolTerminals && !slices.Contains(ids, id) {
				if _, ok := d.calls[c.id]; !ok && len(d.calls) >= maxDisplayTitles {
					clear(d.calls)
				}
				ids = append(ids, id)
				d.calls[c.id] = ids
			}
		}
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	command, args, cwd, ok := commandOf(c.rawInput)
	if !ok && c.title == "" {
		return
	}
	src := fromInput
	if command == "" {
		command, src = c.title, fromTitle
	}
	for _, id := range ids {
		d.update(sessionID, id, command, slices.Clone(args), cwd, src)
	}
}

// maxFallbackOutput bounds the output a display terminal is given from
// its tool call (endCall): its last bytes, as a terminal keeps its tail.
const maxFallbackOutput = 64 << 10

// rawCommandOutput is the part of a tool call's rawOutput that holds a
// command's output, in codex's words. Each is read as a string only.
type rawCommandOutput struct {
	FormattedOutput  json.RawMessage `json:"formatted_output"`
	AggregatedOutput json.RawMessage `json:"aggregated_output"`
	Stdout           json.RawMessage `json:"stdout"`
}

// fallbackOutput is the output a tool call carries for a terminal that got
// none: the first of rawOutput's output fields that is a string, else its
// text content.
func fallbackOutput(rawOutput json.RawMessage, content []acp.ToolCallContent) string {
	var ro rawCommandOutput
	if len(rawOutput) > 0 && json.Unmarshal(rawOutput, &ro) == nil {
		for _, f := range []json.RawMessage{ro.FormattedOutput, ro.AggregatedOutput, ro.Stdout} {
			var s string
			if len(f) > 0 && json.Unmarshal(f, &s) == nil {
				return s
			}
		}
	}
	var b strings.Builder
	for _, c := range content {
		if c, ok := c.(*acp.Content); ok {
			if t, ok := c.Content.(*acp.TextContent); ok && t.Text != "" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(utf8cut.Tail(t.Text, maxFallbackOutput))
				if b.Len() > 2*maxFallbackOutput {
					break
				}
			}
		}
	}
	return b.String()
}

// fallback gives each display terminal of an ended tool call that got no
// output the tool call's own (fallbackOutput).
func (d *DisplayTerminals) fallback(sessionID acp.SessionID, c *callUpdate) {
	d.mu.Lock()
	var silent []acp.TerminalID
	for _, id := range d.calls[c.id] {
		if t := d.known[id]; t != nil && !t.exited && t.shown == 0 {
			silent = append(silent, id)
		}
	}
	d.mu.Unlock()
	if len(silent) == 0 {
		return
	}
	out := utf8cut.Tail(fallbackOutput(c.rawOutput, c.content), maxFallbackOutput)
	if out == "" {
		return
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n" // the output's last line is complete
	}
	for _, id := range silent {
		d.output(sessionID, id, []byte(out))
	}
}

// endCall ends the display terminals of a tool call that ended: those that
// have not exited exit with no exit status, which the renderers show as
// the tool call's status.
func (d *DisplayTerminals) endCall(sessionID acp.SessionID, call acp.ToolCallID) {
	d.mu.Lock()
	ids := d.calls[call]
	delete(d.calls, call)
	d.mu.Unlock()
	for _, id := range ids {
		d.exit(sessionID, id, nil, nil)
	}
}
