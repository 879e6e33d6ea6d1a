package client

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// Display-only terminals: Zed's _meta extension, used by agents that run
// commands themselves (codex-acp, claude-agent-acp and others) to stream
// them into the client's UI. A client advertises it with
// clientCapabilities._meta.terminal_output = true; the agent then sends
//
//   - on the tool_call: _meta.terminal_info = {terminal_id, cwd?}, and a
//     {"type":"terminal","terminalId":…} content item;
//   - on tool_call_updates: _meta.terminal_output = {terminal_id, data},
//     data being the next UTF-8 text of the output;
//   - on the last update: _meta.terminal_exit = {terminal_id, exit_code,
//     signal}.
//
// The ACP v2 draft's form, which acpterm decodes inside v1 sessions as Zed
// does, and asks for with clientCapabilities._meta.terminal_update = true
// (acp.MetaTerminalUpdate):
//
//   - the session update terminal_update {terminalId, command?, cwd?,
//     output?, exitStatus?}: an upsert; an exitStatus ends the terminal;
//   - the session update terminal_output_chunk {terminalId, data}: the
//     next bytes of the output, base64.
//
// The ids are the agent's, not terminals of acpterm's manager. The
// displayTerminals adapter turns these into the terminal events the
// renderers already draw, with Info.Display set on the created event: no
// process of acpterm's runs them (see isDisplay).

// metaTerminalOutputKey is the capability key and the update key.
const metaTerminalOutputKey = acp.MetaTerminalOutput

// isDisplay reports whether a created event's Info is that of a
// display-only terminal.
func isDisplay(info *terminal.Info) bool { return info != nil && info.Display }

// displayTerminals feeds a Renderer the display-only terminals of the
// session updates passing through it.
type displayTerminals struct {
	r Renderer

	mu     sync.Mutex
	known  map[string]*displayTerm   // display terminals created so far
	exited int                       // how many of known have exited
	own    map[string]bool           // ids of acpterm's own terminals (ownTerminal)
	titles map[acp.ToolCallID]string // to name a terminal first seen on an update
}

// displayTerm is what is remembered of a display terminal.
type displayTerm struct {
	shown  uint64 // output bytes passed on, for v2 output snapshots
	exited bool
}

func newDisplayTerminals(r Renderer) *displayTerminals {
	return &displayTerminals{r: r, known: map[string]*displayTerm{}, own: map[string]bool{}, titles: map[acp.ToolCallID]string{}}
}

// ownTerminal notes that id names one of acpterm's own terminals. The
// renderers know a terminal by its id alone, and the agent learns the ids
// of acpterm's terminals from terminal/create: display messages naming
// one would add to the output of a command acpterm ran and forge its exit
// status. They are ignored. The pump notes each id before the renderer has
// the terminal, so before terminal/create answers (see shownGate). One id
// is kept per command acpterm ran, as the renderers keep the terminals.
func (d *displayTerminals) ownTerminal(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.own[id] = true
}

// SessionUpdate passes n to the renderer, preceded by the terminal events
// its _meta describes, so that a tool call's terminal exists, and has its
// status, by the time the renderer sees the tool call.
func (d *displayTerminals) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	var meta acp.Meta
	var id acp.ToolCallID
	var status *acp.ToolCallStatus
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		meta, id, status = u.Meta, u.ToolCallID, &u.Status
		d.setTitle(id, u.Title)
	case *acp.ToolCallUpdate:
		meta, id, status = u.Meta, u.ToolCallID, u.Status
		if u.Title != nil {
			d.setTitle(id, *u.Title)
		}
	case *acp.UnknownSessionUpdate:
		d.fromV2(string(n.SessionID), n.Update)
	}
	if len(meta) > 0 {
		d.fromMeta(string(n.SessionID), id, meta)
	}
	if status != nil && toolDone(*status) {
		d.mu.Lock()
		delete(d.titles, id)
		d.mu.Unlock()
	}
	d.r.SessionUpdate(n, raw)
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
func (d *displayTerminals) setTitle(id acp.ToolCallID, title string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.titles[id]; !ok && len(d.titles) >= maxDisplayTitles {
		clear(d.titles)
	}
	d.titles[id] = clipString(title, maxDisplayTitle)
}

func (d *displayTerminals) fromMeta(sessionID string, call acp.ToolCallID, meta acp.Meta) {
	var info acp.MetaTerminalInfoValue
	if decodeMeta(meta, acp.MetaTerminalInfo, &info) && info.TerminalID != "" {
		d.create(sessionID, call, string(info.TerminalID), "", info.Cwd)
	}
	var out acp.MetaTerminalOutputValue
	if decodeMeta(meta, metaTerminalOutputKey, &out) && out.TerminalID != "" {
		d.create(sessionID, call, string(out.TerminalID), "", "")
		d.output(sessionID, string(out.TerminalID), []byte(out.Data))
	}
	var exit acp.MetaTerminalExitValue
	if decodeMeta(meta, acp.MetaTerminalExit, &exit) && exit.TerminalID != "" {
		d.create(sessionID, call, string(exit.TerminalID), "", "")
		d.exit(sessionID, string(exit.TerminalID), exit.ExitCode, exit.Signal)
	}
}

// fromV2 handles the v2 terminal session updates; other unknown updates
// are left to the renderer. Malformed ones are ignored: display only.
func (d *displayTerminals) fromV2(sessionID string, u acp.SessionUpdate) {
	if c, err := acp.V2TerminalOutputChunkOf(u); c != nil && err == nil && c.TerminalID != "" {
		d.create(sessionID, "", string(c.TerminalID), "", "")
		d.output(sessionID, string(c.TerminalID), c.Data)
		return
	}
	tu, err := acp.V2TerminalUpdateOf(u)
	if tu == nil || err != nil || tu.TerminalID == "" {
		return
	}
	id := string(tu.TerminalID)
	var cmd, cwd string
	if tu.Command != nil {
		cmd = *tu.Command
	}
	if tu.Cwd != nil {
		cwd = string(*tu.Cwd)
	}
	d.create(sessionID, "", id, cmd, cwd)
	if tu.Output != nil {
		// An authoritative snapshot of the whole output. The renderers
		// append, so what goes on is the part past what they were given:
		// all of it for a snapshot that extends the output, nothing for
		// one that rewrites or shortens it.
		d.mu.Lock()
		var fresh []byte
		if t := d.known[id]; t != nil {
			if n := uint64(len(tu.Output.Data)); n > t.shown {
				fresh = tu.Output.Data[t.shown:]
			}
			t.shown = uint64(len(tu.Output.Data) - len(fresh)) // output adds fresh
		}
		d.mu.Unlock()
		d.output(sessionID, id, fresh)
	}
	if es := tu.ExitStatus; es != nil {
		d.exit(sessionID, id, es.ExitCode, es.Signal)
	}
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
func (d *displayTerminals) create(sessionID string, call acp.ToolCallID, id, command, cwd string) {
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
	d.known[id] = &displayTerm{}
	if command == "" {
		command = d.titles[call]
	}
	command = clipString(command, maxDisplayTitle)
	d.mu.Unlock()
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: sessionID, TerminalID: id,
		Info: &terminal.Info{SessionID: sessionID, TerminalID: id, Command: command, Cwd: cwd, Started: time.Now(), Display: true}})
}

// output passes data on, unless the terminal has exited.
func (d *displayTerminals) output(sessionID, id string, data []byte) {
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
func (d *displayTerminals) exit(sessionID, id string, code *int64, signal *string) {
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
		st.Signal = clipString(*signal, maxDisplayTitle)
	case code != nil:
		c := uint32(*code) // as a shell shows it: -1 is 4294967295
		st.ExitCode = &c
	}
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, SessionID: sessionID, TerminalID: id, Status: st})
}

// decodeMeta decodes meta[key] into v, reporting whether it was there and
// well formed. A malformed value is ignored: it is display only.
func decodeMeta(meta acp.Meta, key string, v any) bool {
	raw, ok := meta[key]
	return ok && json.Unmarshal(raw, v) == nil
}
