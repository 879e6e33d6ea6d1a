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
// The ids are the agent's, not terminals of acpterm's manager. The
// displayTerminals adapter turns these into the terminal events the
// renderers already draw, with PID 0 on the created event: no process of
// acpterm's runs them (see isDisplay).

// metaTerminalOutputKey is the capability key and the update key.
const metaTerminalOutputKey = "terminal_output"

// isDisplay reports whether a created event's Info is that of a
// display-only terminal.
func isDisplay(info *terminal.Info) bool { return info != nil && info.PID == 0 }

// displayTerminals feeds a Renderer the display-only terminals of the
// session updates passing through it.
type displayTerminals struct {
	r Renderer

	mu     sync.Mutex
	known  map[string]bool           // display terminals created so far
	titles map[acp.ToolCallID]string // to name a terminal first seen on an update
}

func newDisplayTerminals(r Renderer) *displayTerminals {
	return &displayTerminals{r: r, known: map[string]bool{}, titles: map[acp.ToolCallID]string{}}
}

type metaTerminalInfo struct {
	TerminalID string `json:"terminal_id"`
	Cwd        string `json:"cwd"`
}

type metaTerminalOutput struct {
	TerminalID string `json:"terminal_id"`
	Data       string `json:"data"`
}

type metaTerminalExit struct {
	TerminalID string  `json:"terminal_id"`
	ExitCode   *int64  `json:"exit_code"`
	Signal     *string `json:"signal"`
}

// SessionUpdate passes n to the renderer, preceded by the terminal events
// its _meta describes, so that a tool call's terminal exists, and has its
// status, by the time the renderer sees the tool call.
func (d *displayTerminals) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	var meta acp.Meta
	var id acp.ToolCallID
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		meta, id = u.Meta, u.ToolCallID
		d.mu.Lock()
		d.titles[id] = u.Title
		d.mu.Unlock()
	case *acp.ToolCallUpdate:
		meta, id = u.Meta, u.ToolCallID
		if u.Title != nil {
			d.mu.Lock()
			d.titles[id] = *u.Title
			d.mu.Unlock()
		}
	}
	if len(meta) > 0 {
		d.fromMeta(string(n.SessionID), id, meta)
	}
	d.r.SessionUpdate(n, raw)
}

func (d *displayTerminals) fromMeta(sessionID string, call acp.ToolCallID, meta acp.Meta) {
	var info metaTerminalInfo
	if decodeMeta(meta, "terminal_info", &info) && info.TerminalID != "" {
		d.create(sessionID, call, info.TerminalID, info.Cwd)
	}
	var out metaTerminalOutput
	if decodeMeta(meta, metaTerminalOutputKey, &out) && out.TerminalID != "" {
		d.create(sessionID, call, out.TerminalID, "")
		if out.Data != "" {
			d.r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, SessionID: sessionID,
				TerminalID: out.TerminalID, Data: []byte(out.Data)})
		}
	}
	var exit metaTerminalExit
	if decodeMeta(meta, "terminal_exit", &exit) && exit.TerminalID != "" {
		d.create(sessionID, call, exit.TerminalID, "")
		st := &terminal.ExitStatus{}
		switch {
		case exit.Signal != nil && *exit.Signal != "":
			st.Signal = *exit.Signal
		case exit.ExitCode != nil:
			code := uint32(*exit.ExitCode) // as a shell shows it: -1 is 4294967295
			st.ExitCode = &code
		}
		d.r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, SessionID: sessionID,
			TerminalID: exit.TerminalID, Status: st})
	}
}

// create announces terminal id once.
func (d *displayTerminals) create(sessionID string, call acp.ToolCallID, id, cwd string) {
	d.mu.Lock()
	if d.known[id] {
		d.mu.Unlock()
		return
	}
	d.known[id] = true
	title := d.titles[call]
	d.mu.Unlock()
	d.r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: sessionID, TerminalID: id,
		Info: &terminal.Info{SessionID: sessionID, TerminalID: id, Command: title, Cwd: cwd, Started: time.Now()}})
}

// decodeMeta decodes meta[key] into v, reporting whether it was there and
// well formed. A malformed value is ignored: it is display only.
func decodeMeta(meta acp.Meta, key string, v any) bool {
	raw, ok := meta[key]
	return ok && json.Unmarshal(raw, v) == nil
}
