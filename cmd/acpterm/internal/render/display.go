package render

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/sandbox"
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
// JetBrains' form (codex-acp's TypeScript adapter): the client declares
// clientCapabilities._meta.terminal_output_delta = true, and the agent
// sends _meta.terminal_output_delta = {terminal_id, data} in place of
// terminal_output, each data appended to the output.
//
// The ACP v2 draft's form, which acpterm decodes inside v1 sessions as Zed
// does, and asks for with clientCapabilities._meta.terminal_update = true
// (display.MetaTerminalUpdate):
//
//   - the session update terminal_update {terminalId, command?, cwd?,
//     output?, exitStatus?}: an upsert; an exitStatus ends the terminal;
//   - the session update terminal_output_chunk {terminalId, data}: the
//     next bytes of the output, base64.
//
// The ids are the agent's, not terminals of acpterm's manager. The
// DisplayTerminals adapter turns these into the terminal events the
// renderers already draw, with Info.Display set on the created event: no
// process of acpterm's runs them (see isDisplay).
//
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

// metaTerminalOutputKey is the capability key and the update key.
const metaTerminalOutputKey = display.MetaTerminalOutput

// metaTerminalOutputDeltaKey is JetBrains' capability key and update key,
// as codex-acp's TypeScript adapter reads and writes them.
const metaTerminalOutputDeltaKey = "terminal_output_delta"

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

// fromMeta creates the terminals a tool call's _meta names and passes on
// their output; the exit is left to the caller, after fromCall.
func (d *DisplayTerminals) fromMeta(sessionID acp.SessionID, c *callUpdate) {
	if len(c.meta) == 0 {
		return
	}
	// A terminal is named by the command of its tool call's rawInput,
	// else by the tool call's title (create).
	command, args, cwd, _ := commandOf(c.rawInput)
	var info display.MetaTerminalInfoValue
	if decodeMeta(c.meta, display.MetaTerminalInfo, &info) && info.TerminalID != "" {
		if info.Cwd != "" {
			cwd = info.Cwd
		}
		d.create(sessionID, c.id, info.TerminalID, command, args, cwd)
	}
	for _, key := range []string{metaTerminalOutputKey, metaTerminalOutputDeltaKey} {
		var out display.MetaTerminalOutputValue
		if decodeMeta(c.meta, key, &out) && out.TerminalID != "" {
			d.create(sessionID, c.id, out.TerminalID, command, args, cwd)
			d.output(sessionID, out.TerminalID, []byte(out.Data))
		}
	}
	if exit, ok := metaExit(c.meta); ok {
		d.create(sessionID, c.id, exit.TerminalID, command, args, cwd)
	}
}

// metaExit is the terminal_exit of a tool call's _meta, if it has one.
func metaExit(meta acp.Meta) (display.MetaTerminalExitValue, bool) {
	var exit display.MetaTerminalExitValue
	ok := decodeMeta(meta, display.MetaTerminalExit, &exit) && exit.TerminalID != ""
	return exit, ok
}

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

// fromV2 handles the v2 terminal session updates; other unknown updates
// are left to the renderer. Malformed ones are ignored: display only.
func (d *DisplayTerminals) fromV2(sessionID acp.SessionID, u acp.SessionUpdate) {
	// The draft's terminal IDs name the same display terminals as Zed's
	// _meta ones: one namespace, acp.TerminalID.
	if c, err := display.TerminalOutputChunkOf(u); c != nil && err == nil && c.TerminalID != "" {
		id := acp.TerminalID(c.TerminalID)
		d.create(sessionID, "", id, "", nil, "")
		d.output(sessionID, id, c.Data)
		return
	}
	tu, err := display.TerminalUpdateOf(u)
	if tu == nil || err != nil || tu.TerminalID == "" {
		return
	}
	id := acp.TerminalID(tu.TerminalID)
	var cmd, cwd string
	if tu.Command != nil {
		cmd = *tu.Command
	}
	if tu.Cwd != nil {
		cwd = string(*tu.Cwd)
	}
	d.create(sessionID, "", id, cmd, nil, cwd)
	// A later terminal_update may bring the command or cwd (an upsert).
	d.update(sessionID, id, cmd, nil, cwd, fromTerminal)
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

// decodeMeta decodes meta[key] into v, reporting whether it was there and
// well formed. A malformed value is ignored: it is display only.
func decodeMeta(meta acp.Meta, key string, v any) bool {
	raw, ok := meta[key]
	return ok && json.Unmarshal(raw, v) == nil
}
