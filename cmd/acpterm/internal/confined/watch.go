package confined

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// Watch follows the execute tool calls of one turn: their status, the
// text they show (content, rawOutput, the display extension's output), and
// the output and exit of the terminals of acpterm's they embed. It is fed
// by the session updates and the terminal events, from two goroutines.
type Watch struct {
	mu        sync.Mutex
	calls     map[acp.ToolCallID]*execCall
	order     []acp.ToolCallID
	terminals map[acp.TerminalID]*termOutcome
	overflow  bool // more calls than maxWatchedCalls: no verdict
}

// execCall is what the watch knows of one tool call.
type execCall struct {
	execute   bool
	status    acp.ToolCallStatus
	text      tailText
	exitCode  *int // a nonzero code it reported (display terminal exit, rawOutput)
	terminals []acp.TerminalID
}

// termOutcome is the output and exit of one of acpterm's terminals.
type termOutcome struct {
	text    tailText
	exited  bool
	failed  bool // exited with a nonzero code, or by a signal
	display bool // the agent ran it, and reports its output (terminal.Info.Display)
}

const (
	// maxWatchedCalls and maxWatchedText bound what a turn's watch keeps:
	// the agent decides how many calls it makes and how much they say.
	maxWatchedCalls = 1024
	maxWatchedText  = 16 << 10
)

// tailText keeps the newest maxWatchedText bytes written to it.
type tailText struct{ b []byte }

func (t *tailText) add(s []byte) {
	t.b = append(t.b, s...)
	if n := len(t.b); n > maxWatchedText {
		t.b = append(t.b[:0], t.b[n-maxWatchedText:]...)
	}
}

// NewWatch returns a Watch that has seen nothing.
func NewWatch() *Watch {
	return &Watch{calls: map[acp.ToolCallID]*execCall{}, terminals: map[acp.TerminalID]*termOutcome{}}
}

// Reset forgets the calls of the turn before; terminals are kept, a
// later call may embed one. A nil Watch does nothing.
func (w *Watch) Reset() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = map[acp.ToolCallID]*execCall{}
	w.order = nil
	w.overflow = false
}

// call is the entry of id, made on first sight; nil past the bound.
// w.mu is held.
func (w *Watch) call(id acp.ToolCallID) *execCall {
	if c, ok := w.calls[id]; ok {
		return c
	}
	if len(w.calls) >= maxWatchedCalls {
		w.overflow = true
		return nil
	}
	c := &execCall{}
	w.calls[id] = c
	w.order = append(w.order, id)
	return c
}

// Update takes one session update.
func (w *Watch) Update(u acp.SessionUpdate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch u := u.(type) {
	case *acp.ToolCall:
		c := w.call(u.ToolCallID)
		if c == nil {
			return
		}
		c.execute = u.Kind == acp.ToolKindExecute
		c.status = u.Status
		c.take(u.Content, u.RawOutput, u.Meta)
	case *acp.ToolCallUpdate:
		c := w.call(u.ToolCallID)
		if c == nil {
			return
		}
		if u.Kind != nil {
			c.execute = *u.Kind == acp.ToolKindExecute
		}
		if u.Status != nil {
			c.status = *u.Status
		}
		c.take(u.Content, u.RawOutput, u.Meta)
	}
}

// take adds what one update of the call shows.
func (c *execCall) take(content []acp.ToolCallContent, rawOutput json.RawMessage, meta acp.Meta) {
	for _, cc := range content {
		switch cc := cc.(type) {
		case *acp.Content:
			if t, ok := cc.Content.(*acp.TextContent); ok {
				c.text.add([]byte(t.Text + "\n"))
			}
		case *acp.Terminal:
			c.terminals = append(c.terminals, cc.TerminalID)
		}
	}
	if len(rawOutput) > 0 {
		c.text.add(append(jsonText(rawOutput), '\n'))
		c.noteExit(rawOutput, "exit_code", "exitCode")
	}
	// Output in the display dialects (Zed's, and JetBrains' deltas, which
	// codex-acp 2.6 sends).
	for _, k := range []string{"terminal_output", "terminal_output_delta"} {
		if out, ok := meta[k]; ok {
			c.text.add(append(jsonText(out), '\n'))
		}
	}
	if exit, ok := meta["terminal_exit"]; ok {
		c.noteExit(exit, "exit_code")
	}
}

// noteExit records a nonzero exit code that raw (a JSON object) reports
// under one of keys.
func (c *execCall) noteExit(raw json.RawMessage, keys ...string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	for _, k := range keys {
		var code int
		if json.Unmarshal(obj[k], &code) == nil && code != 0 {
			c.exitCode = &code
			return
		}
	}
}

// jsonText is the strings of a JSON value, one per line (so that an
// error message in rawOutput reads as it was printed, its escapes
// undone), or the raw bytes when it does not decode.
func jsonText(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var b []byte
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b = append(b, v...)
			b = append(b, '\n')
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return b
}

// TerminalEvent takes one event of acpterm's terminals. A nil Watch does
// nothing.
func (w *Watch) TerminalEvent(ev terminal.Event) {
	if w == nil {
		return
	}
	switch ev.Kind {
	case terminal.EventCreated, terminal.EventOutput, terminal.EventExited:
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.terminals[ev.TerminalID]
	if !ok {
		if len(w.terminals) >= maxWatchedCalls {
			return
		}
		t = &termOutcome{}
		w.terminals[ev.TerminalID] = t
	}
	switch ev.Kind {
	case terminal.EventCreated:
		t.display = ev.Info != nil && ev.Info.Display
	case terminal.EventOutput:
		t.text.add(ev.Data)
	case terminal.EventExited:
		t.exited = true
		t.failed = ev.Status == nil || ev.Status.ExitCode == nil || *ev.Status.ExitCode != 0
	}
	if ev.Kind == terminal.EventCreated && len(w.terminals) > maxWatchedCalls/2 {
		// Terminals outlive turns; forget those of earlier turns
		// that ended, so that a long session keeps watching.
		for id, o := range w.terminals {
			if o.exited && id != ev.TerminalID {
				delete(w.terminals, id)
			}
		}
	}
}

// verdict says whether every execute tool call of the turn failed
// because of acpterm's sandbox, and if so the number of calls and the
// first confinement error seen. agent is the agent's sandbox, nil when
// it is not confined (when it is, everything it runs is too); cmds is the
// sandbox of the commands it runs in acpterm's terminals, nil when there
// is none. Their writable and read-only paths tell a denied write outside
// them from one that is the command's own business. A call still running
// at the turn's end, or one that did not fail, means no.
func (w *Watch) verdict(agent, cmds *sandbox.Applied) (n int, evidence string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overflow {
		return 0, "", false
	}
	for _, id := range w.order {
		c := w.calls[id]
		if !c.execute {
			continue
		}
		n++
		failed := c.status == acp.ToolCallStatusFailed || c.exitCode != nil
		text := string(c.text.b)
		box := agent
		for _, tid := range c.terminals {
			if t, ok := w.terminals[tid]; ok {
				text += "\n" + string(t.text.b)
				failed = failed || t.failed
				if box == nil && !t.display {
					box = cmds // acpterm ran it, in the commands' sandbox
				}
			}
		}
		if !failed || box == nil {
			return n, "", false
		}
		line := confinementError(text, box)
		if line == "" {
			return n, "", false
		}
		if evidence == "" {
			evidence = line
		}
	}
	return n, evidence, n > 0
}

var (
	// alwaysConfinement are errors that, inside acpterm's sandbox, come
	// from it: everything outside the writable paths is mounted
	// read-only (EROFS), and a sandbox of the agent's own (codex's
	// bubblewrap) cannot set itself up inside it.
	alwaysConfinement = regexp.MustCompile(`(?i)read-only file system|os error 30|\berofs\b|bubblewrap|\bbwrap\b|landlock`)
	// deniedConfinement are errors that come from the sandbox only when
	// the path they name is outside the writable paths: a command may well
	// be denied a file of the workspace for reasons of its own.
	deniedConfinement = regexp.MustCompile(`(?i)permission denied|operation not permitted|\beacces\b|\beperm\b|os error 1[^0-9]|os error 13`)
	// absPath finds absolute paths in an error line.
	absPath = regexp.MustCompile(`/[^\s'"` + "`" + `:,;()\[\]{}<>]*`)
)

// confinementError is the first line of text that reads as a failure
// caused by box's confinement, sanitized and cut, or "".
func confinementError(text string, box *sandbox.Applied) string {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if alwaysConfinement.MatchString(line) {
			return textsafe.Line(clip(line, 200))
		}
		if !deniedConfinement.MatchString(line) {
			continue
		}
		for _, p := range absPath.FindAllString(line, -1) {
			if outsideWritable(p, box) || hiddenByLandlock(p, box) {
				return textsafe.Line(clip(line, 200))
			}
		}
	}
	return ""
}

// outsideWritable reports whether box lets no command write path: it is
// outside its writable paths, or in a read-only or protected one.
func outsideWritable(path string, box *sandbox.Applied) bool {
	if len(box.Writable) == 0 {
		return false // writes are not confined
	}
	if agentstart.Under(path, box.ReadOnly) || agentstart.Under(path, box.Protected) {
		return true
	}
	return !agentstart.Under(path, box.Writable)
}

// hiddenByLandlock reports whether path is one that Landlock hides from
// box's commands (Applied.HiddenByLandlock), where reading it is refused
// with EACCES.
func hiddenByLandlock(path string, box *sandbox.Applied) bool {
	return box.HiddenByLandlock && agentstart.Under(path, box.Hidden)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// confinedMessage is what acpterm says on stderr when every command of a
// turn failed in its sandbox: what happened, the first error, and what
// widens the sandbox.
func confinedMessage(n int, evidence string, agentConfined, ownSandbox bool) string {
	what := "the command the agent ran"
	if n > 1 {
		what = fmt.Sprintf("all %d commands the agent ran", n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed in acpterm's sandbox (%s).", what, evidence)
	if ownSandbox {
		b.WriteString(" The agent's own sandbox cannot start inside acpterm's: choose a mode of the agent that runs commands directly (--mode; acpterm does so by itself for agents whose profile names one), or --sandbox-agent=false to leave the agent to its own sandbox.")
	} else {
		b.WriteString(" Its commands may write only the workspace roots, the build caches, a private TMPDIR")
		if agentConfined {
			b.WriteString(" and the agent's own state")
		}
		b.WriteString(": --writable PATH adds a path")
		if agentConfined {
			b.WriteString(", --sandbox-agent=false leaves the agent itself unconfined")
		}
		b.WriteString(", --sandbox off runs everything with your rights.")
	}
	return b.String()
}

// ownSandbox finds, in an error, a sandbox of the agent's own.
var ownSandbox = regexp.MustCompile(`(?i)bubblewrap|\bbwrap\b|sandbox-exec|seatbelt`)

// Failure is the message for a turn whose execute tool calls all failed
// in acpterm's sandbox, or "". agent is the agent's sandbox, nil when it
// is not confined; cmds is the sandbox of the commands it runs in
// acpterm's terminals, nil when they run unconfined. A nil Watch says "".
func (w *Watch) Failure(agent, cmds *sandbox.Applied) string {
	if w == nil {
		return ""
	}
	n, evidence, ok := w.verdict(agent, cmds)
	if !ok {
		return ""
	}
	msg := confinedMessage(n, evidence, agent != nil, ownSandbox.MatchString(evidence))
	for _, p := range absPath.FindAllString(evidence, -1) {
		if (agent != nil && hiddenByLandlock(p, agent)) || (cmds != nil && hiddenByLandlock(p, cmds)) {
			return msg + " " + p + " is a secret the sandbox hides: --readable PATH re-allows one."
		}
	}
	return msg
}
