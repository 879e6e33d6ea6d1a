package render

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// Display-only terminals are those an agent runs itself and streams to
// the client in one of the dialects read in display_meta.go and
// display_v2.go.
//
// The ids are the agent's, not terminals of acpterm's manager. The
// DisplayTerminals adapter turns these into the terminal events the
// renderers already draw, with Info.Display set on the created event: no
// process of acpterm's runs them (see isDisplay).

// DisplayCapabilities is the clientCapabilities._meta with which a client
// that passes its session updates through DisplayTerminals asks for
// display terminals, in each dialect the adapter reads: Zed's
// terminal_output, JetBrains' terminal_output_delta and the v2 draft's
// terminal_update.
func DisplayCapabilities() acp.Meta {
	yes := json.RawMessage("true")
	return acp.Meta{metaTerminalOutputKey: yes, metaTerminalOutputDeltaKey: yes, display.MetaTerminalUpdate: yes}
}

// isDisplay reports whether a created event's Info is that of a
// display-only terminal.
func isDisplay(info *terminal.Info) bool { return info != nil && info.Display }

// DisplayTerminals feeds a Renderer the display-only terminals of the
// session updates passing through it: a client passes each session/update
// to its SessionUpdate instead of the renderer's, and every other call
// straight to the renderer. Its methods are safe for concurrent use.
type DisplayTerminals struct {
	r Renderer

	mu     sync.Mutex
	known  map[acp.TerminalID]*displayTerm // display terminals created so far
	exited int                             // how many of known have exited
	own    map[acp.TerminalID]bool         // ids of acpterm's own terminals (OwnTerminal)
	titles map[acp.ToolCallID]string       // to name a terminal first seen on an update
	// calls are the display terminals of each running tool call, which
	// its end ends (at most maxToolTerminals each, forgotten at its end
	// and with titles).
	calls map[acp.ToolCallID][]acp.TerminalID
	// agentSandbox, when set, says how the agent itself is confined: the
	// commands it runs are, the same way (see SetAgentSandbox).
	agentSandbox func() *sandbox.Applied
}

// displayTerm is what is remembered of a display terminal.
type displayTerm struct {
	shown   uint64 // output bytes passed on, for v2 output snapshots
	exited  bool
	command string // as last announced, to announce changes only
	args    []string
	cwd     string
	src     commandSource // where command came from
}

// commandSource ranks where a display terminal's command came from: a
// later one replaces it only from a source as good (the agent's own
// terminal_update over the tool call's rawInput over its title).
type commandSource uint8

const (
	fromTitle commandSource = iota
	fromInput
	fromTerminal
)

// NewDisplayTerminals returns the adapter in front of r.
func NewDisplayTerminals(r Renderer) *DisplayTerminals {
	return &DisplayTerminals{r: r, known: map[acp.TerminalID]*displayTerm{}, own: map[acp.TerminalID]bool{},
		titles: map[acp.ToolCallID]string{}, calls: map[acp.ToolCallID][]acp.TerminalID{}}
}

// SetAgentSandbox tells the adapter how to learn the agent's own sandbox,
// which is the sandbox of every command the agent runs itself: display
// terminals carry it in Info.Sandbox from then on.
func (d *DisplayTerminals) SetAgentSandbox(f func() *sandbox.Applied) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.agentSandbox = f
}

// OwnTerminal notes that id names one of acpterm's own terminals. The
// renderers know a terminal by its id alone, and the agent learns the ids
// of acpterm's terminals from terminal/create: display messages naming
// one would add to the output of a command acpterm ran and forge its exit
// status. They are ignored. The caller notes each id before the renderer
// has the terminal, so before terminal/create answers and the agent can
// name it. One id is kept per command acpterm ran, as the renderers keep
// the terminals.
func (d *DisplayTerminals) OwnTerminal(id acp.TerminalID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.own[id] = true
}

// SessionUpdate passes n to the renderer, preceded by the terminal events
// its _meta describes, so that a tool call's terminal exists, and has its
// status, by the time the renderer sees the tool call.
func (d *DisplayTerminals) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	sid := n.SessionID
	var c callUpdate
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		c = callUpdate{id: u.ToolCallID, meta: u.Meta, status: u.Status, content: u.Content, rawInput: u.RawInput, rawOutput: u.RawOutput, title: u.Title}
		d.setTitle(c.id, u.Title)
	case *acp.ToolCallUpdate:
		c = callUpdate{id: u.ToolCallID, meta: u.Meta, content: u.Content, rawInput: u.RawInput, rawOutput: u.RawOutput, update: true}
		if u.Status != nil {
			c.status = *u.Status
		}
		if u.Title != nil {
			c.title = *u.Title
			d.setTitle(c.id, *u.Title)
		}
	case *acp.UnknownSessionUpdate:
		d.fromV2(sid, n.Update)
	}
	if c.id != "" || len(c.meta) > 0 {
		d.fromMeta(sid, &c)
		d.fromCall(sid, &c)
		// Only an update ends a tool call's terminals: a tool call
		// announced as done with its terminal still streams it.
		done := c.update && toolDone(c.status)
		if done {
			d.fallback(sid, &c)
		}
		if exit, ok := metaExit(c.meta); ok {
			d.exit(sid, exit.TerminalID, exit.ExitCode, exit.Signal)
		}
		if done {
			d.endCall(sid, c.id)
			d.mu.Lock()
			delete(d.titles, c.id)
			d.mu.Unlock()
		}
	}
	d.r.SessionUpdate(n, raw)
}

// callUpdate is what the adapter reads of a tool_call or tool_call_update.
type callUpdate struct {
	id                  acp.ToolCallID
	meta                acp.Meta
	status              acp.ToolCallStatus
	title               string
	content             []acp.ToolCallContent
	rawInput, rawOutput json.RawMessage
	update              bool // a tool_call_update
}

// Bounds of the titles remembered to name display terminals: the map
// lives as long as the session, and an agent may start any number of
// tool calls, with titles of any length, and never end them.
const (
	maxDisplayTitles = 1024
	maxDisplayTitle  = 1 << 10
)

// setTitle remembers the title of tool call id, until it ends. When
// maxDisplayTitles are remembered, the old ones are forgotten: a terminal
// first seen on an update of a forgotten tool call only goes unnamed.
func (d *DisplayTerminals) setTitle(id acp.ToolCallID, title string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.titles[id]; !ok && len(d.titles) >= maxDisplayTitles {
		clear(d.titles)
	}
	d.titles[id] = Clip(title, maxDisplayTitle)
}

// update announces a display terminal's new command or cwd, if either
// changed: a created event for a terminal the renderers have. A command
// from src replaces one from a source as good or worse; a cwd replaces
// none but the agent's own (fromTerminal), and fills an empty one.
func (d *DisplayTerminals) update(sessionID acp.SessionID, id acp.TerminalID, command string, args []string, cwd string, src commandSource) {
	command = Clip(command, maxDisplayTitle)
	for i, a := range args {
		args[i] = Clip(a, maxDisplayTitle)
	}
	if len(cwd) > maxDisplayTitle {
		cwd = ""
	}
	d.mu.Lock()
	t := d.known[id]
	if t == nil || t.exited {
		d.mu.Unlock()
		return
	}
	if command == "" || src < t.src {
		command, args = t.command, t.args
	} else {
		t.src = src
	}
	if cwd == "" || t.cwd != "" && src != fromTerminal {
		cwd = t.cwd
	}
	if command == t.command && slices.Equal(args, t.args) && cwd == t.cwd {
		d.mu.Unlock()
		return
	}
	t.command, t.args, t.cwd = command, args, cwd
	info := d.info(sessionID, id, t)
	d.mu.Unlock()
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: sessionID, TerminalID: id, Info: info})
}

// info is the Info of a display terminal (d.mu held).
func (d *DisplayTerminals) info(sessionID acp.SessionID, id acp.TerminalID, t *displayTerm) *terminal.Info {
	info := &terminal.Info{SessionID: sessionID, TerminalID: id, Command: t.command, Args: t.args, Cwd: t.cwd, Started: time.Now(), Display: true}
	if d.agentSandbox != nil {
		info.Sandbox = d.agentSandbox()
	}
	return info
}

// maxDisplayTerminals bounds the display terminals remembered: known
// lives as long as the session, and an agent may announce any number of
// terminals and never end them. When that many are remembered, those that
// exited are forgotten (ids are never reused, so all that is lost is that
// an agent reusing one would get a new terminal), and while that many
// run, new ones are not shown. Their ids, commands and signals, which the
// renderers keep, are bounded as titles are (maxDisplayTitle): a longer id
// is not shown (ids are short tokens), a longer command or signal is cut.
const maxDisplayTerminals = 1024

// create announces terminal id once, named by its command or else by the
// title of the tool call it came with.
func (d *DisplayTerminals) create(sessionID acp.SessionID, call acp.ToolCallID, id acp.TerminalID, command string, args []string, cwd string) {
	d.mu.Lock()
	if d.known[id] != nil || d.own[id] || len(id) > maxDisplayTitle {
		d.mu.Unlock()
		return
	}
	if len(d.known) >= maxDisplayTerminals && d.exited > 0 {
		for k, t := range d.known {
			if t.exited {
				delete(d.known, k)
			}
		}
		d.exited = 0
	}
	if len(d.known) >= maxDisplayTerminals {
		d.mu.Unlock()
		return
	}
	src := fromInput
	if call == "" {
		src = fromTerminal // a v2 terminal_update or chunk
	}
	if command == "" {
		command, args, src = d.titles[call], nil, fromTitle
	}
	if len(cwd) > maxDisplayTitle {
		cwd = ""
	}
	t := &displayTerm{command: Clip(command, maxDisplayTitle), cwd: cwd, src: src}
	for _, a := range args {
		t.args = append(t.args, Clip(a, maxDisplayTitle))
	}
	d.known[id] = t
	if call != "" && len(d.calls[call]) < maxToolTerminals {
		if _, ok := d.calls[call]; !ok && len(d.calls) >= maxDisplayTitles {
			clear(d.calls)
		}
		d.calls[call] = append(d.calls[call], id)
	}
	info := d.info(sessionID, id, t)
	d.mu.Unlock()
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: sessionID, TerminalID: id, Info: info})
}

// output passes data on, unless the terminal has exited.
func (d *DisplayTerminals) output(sessionID acp.SessionID, id acp.TerminalID, data []byte) {
	d.mu.Lock()
	t := d.known[id]
	ok := t != nil && !t.exited && len(data) > 0
	if ok {
		t.shown += uint64(len(data))
	}
	d.mu.Unlock()
	if ok {
		d.r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, SessionID: sessionID, TerminalID: id, Data: data})
	}
}

// exit passes the exit status on, once.
func (d *DisplayTerminals) exit(sessionID acp.SessionID, id acp.TerminalID, code *int64, signal *string) {
	d.mu.Lock()
	t := d.known[id]
	first := t != nil && !t.exited
	if first {
		t.exited = true
		d.exited++
	}
	d.mu.Unlock()
	if !first {
		return
	}
	st := &terminal.ExitStatus{}
	switch {
	case signal != nil && *signal != "":
		sig := Clip(*signal, maxDisplayTitle)
		st.Signal = &sig
	case code != nil:
		c := uint32(*code) // as a shell shows it: -1 is 4294967295
		st.ExitCode = &c
	}
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, SessionID: sessionID, TerminalID: id, Status: st})
}
