package mcptie

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/terminal"
)

// Bounds: an agent may start any number of tool calls and never end
// them, and send any number of hints for calls that never come.
const (
	maxTiedCalls    = 1024
	maxPendingTies  = 64
	tieShownTimeout = 5 * time.Second
)

// Ties follows the run's running tool calls and the hints waiting for
// theirs. Its methods are safe for concurrent use; a nil one does nothing.
type Ties struct {
	sid   func() acp.SessionID // the run's session, "" until it is known
	r     interface{ TerminalEvent(terminal.Event) }
	shown func(context.Context, acp.SessionID, acp.TerminalID)
	now   func() time.Time

	mu      sync.Mutex
	running map[acp.ToolCallID]*runningCall
	infos   map[termKey]terminal.Info // of the terminals created and not released
	pending []pendingTie              // oldest first
	byArgs  []argsTie                 // terminals waiting for a tool call with their arguments, oldest first
}

// runningCall is what the run knows of a running tool call.
type runningCall struct {
	input string // rawInput, canonical; "" when none was reported
	names bool   // its title or _meta names the offered exec_command
	tied  bool   // a terminal is tied to it
}

// termKey names a terminal: its ID is unique within its session.
type termKey struct {
	session  acp.SessionID
	terminal acp.TerminalID
}

// pendingTie is a terminal waiting to be tied to a tool call.
type pendingTie struct {
	call acp.ToolCallID
	key  termKey
	// released is the Info of a terminal released while it waited
	// for its call by arguments; nil for any other.
	released *terminal.Info
}

// New returns the Ties of a run. session is the run's session, "" until
// it is known; r is the renderer the second created events go to; shown
// returns once the renderer has shown a terminal (or ctx ended), so that
// a terminal is never tied before it is shown.
func New(session func() acp.SessionID, r interface{ TerminalEvent(terminal.Event) }, shown func(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID)) *Ties {
	return &Ties{sid: session, r: r, shown: shown, now: time.Now, running: map[acp.ToolCallID]*runningCall{}, infos: map[termKey]terminal.Info{}}
}

// TerminalEvent records the Info of the MCP server's terminals (the run's
// terminal events, before the renderer has them), for the second created
// event.
func (t *Ties) TerminalEvent(ev terminal.Event) {
	if t == nil {
		return
	}
	key := termKey{ev.SessionID, ev.TerminalID}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case terminal.EventCreated:
		if ev.Info != nil && isMCPSession(ev.SessionID) {
			t.infos[key] = *ev.Info
		}
	case terminal.EventReleased:
		// A terminal waiting for its call by arguments keeps waiting:
		// opencode reports the call only after a short command ended.
		if info, ok := t.infos[key]; ok {
			for i := range t.byArgs {
				if t.byArgs[i].key == key {
					t.byArgs[i].released, t.byArgs[i].at = &info, t.now()
				}
			}
		}
		delete(t.infos, key)
	}
}

// SessionPrefix begins the terminal session IDs of the offered MCP
// server's connections: the terminals of those sessions alone are tied.
const SessionPrefix = "mcp-"

// isMCPSession reports whether a terminal session is one of the offered
// server's.
func isMCPSession(sid acp.SessionID) bool {
	return len(sid) > len(SessionPrefix) && strings.HasPrefix(string(sid), SessionPrefix)
}

// Update follows the tool calls of a session/update the renderer has
// shown, and ties the terminals whose hint named a tool call that starts
// now.
func (t *Ties) Update(n *acp.SessionNotification) {
	if t == nil {
		return
	}
	var id acp.ToolCallID
	var status acp.ToolCallStatus
	var seen callSeen
	switch u := n.Update.(type) {
	case *acp.ToolCall:
		id, status = u.ToolCallID, u.Status
		seen = callSeen{title: u.Title, input: u.RawInput, meta: u.Meta}
	case *acp.ToolCallUpdate:
		id = u.ToolCallID
		if u.Status != nil {
			status = *u.Status
		}
		seen = callSeen{input: u.RawInput, meta: u.Meta}
		if u.Title != nil {
			seen.title = *u.Title
		}
	default:
		return
	}
	if sid := t.sid(); sid == "" || n.SessionID != sid || len(id) > mcpexec.MaxToolCallHint {
		return
	}
	var ready []pendingTie
	t.mu.Lock()
	if status == acp.ToolCallStatusCompleted || status == acp.ToolCallStatusFailed {
		delete(t.running, id)
		t.mu.Unlock()
		return
	}
	c := t.running[id]
	if c == nil {
		c, ready = t.startLocked(id)
	}
	if p, ok := t.seeLocked(c, seen); ok {
		p.call = id
		ready = append(ready, p)
	}
	t.mu.Unlock()
	for _, p := range ready {
		t.tie(p)
	}
}

// startLocked records a tool call that starts running, and returns it
// with the terminals that waited for it by its ID. t.mu is held.
func (t *Ties) startLocked(id acp.ToolCallID) (*runningCall, []pendingTie) {
	if len(t.running) >= maxTiedCalls {
		clear(t.running)
	}
	c := &runningCall{}
	t.running[id] = c
	var ready []pendingTie
	kept := t.pending[:0]
	for _, p := range t.pending {
		if p.call == id {
			ready = append(ready, p)
		} else {
			kept = append(kept, p)
		}
	}
	t.pending = kept
	return c, ready
}

// Hint serves mcpexec.Options.ToolCall: it ties the terminal to its tool
// call now if that runs, else once it starts.
func (t *Ties) Hint(ctx context.Context, h mcpexec.ToolCallHint) {
	if t == nil {
		return
	}
	p := pendingTie{call: h.ToolCallID, key: termKey{h.SessionID, h.TerminalID}}
	if _, ok := canonicalArgs(h.Arguments); p.call == "" && !ok {
		return // nothing to tie by: no wait
	}
	// The renderer must have the terminal before it is tied.
	wctx, cancel := context.WithTimeout(ctx, tieShownTimeout)
	t.shown(wctx, h.SessionID, h.TerminalID)
	cancel()
	if p.call == "" {
		t.hintArgs(p.key, h.Arguments)
		return
	}
	t.mu.Lock()
	if t.running[p.call] == nil {
		if len(t.pending) >= maxPendingTies {
			t.pending = t.pending[1:]
		}
		t.pending = append(t.pending, p)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.tie(p)
}

// tie sends the second created event of a terminal, naming its tool call.
func (t *Ties) tie(p pendingTie) {
	t.mu.Lock()
	info, ok := t.infos[p.key]
	if p.released != nil {
		info, ok = *p.released, true
	}
	c := t.running[p.call]
	if ok && c != nil {
		if c.tied {
			ok = false // one terminal a call
		}
		c.tied = true
	}
	t.mu.Unlock()
	if !ok {
		return // released meanwhile (it was shown on its own), or the call has its terminal
	}
	info.ToolCall = p.call
	t.r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: p.key.session, TerminalID: p.key.terminal, Info: &info})
}

// Tying by arguments. gemini, opencode and qwen name no tool call in
// their tools/call, but opencode and qwen report the call's arguments as
// the rawInput of their ACP tool call (opencode in a tool_call_update,
// qwen in the session/request_permission it asks first), under a title or
// _meta.toolName naming the offered exec_command. A terminal is tied so
// only to a running, untied tool call of the run's session whose rawInput
// equals its arguments (compared as canonical JSON) and that names the
// offered tool, when it is the only such call; with two or more, the
// terminal stays on its own.

// maxTieInput bounds the rawInput and arguments compared: a longer one
// ties nothing.
const maxTieInput = 16 << 10

// execToolNames are the names the agents give the offered server's
// exec_command (the server is "acpterm"), as titles or _meta.toolName:
// Claude Code's and Qwen Code's, opencode's, Codex's, and the title
// Gemini CLI and Qwen Code show.
var execToolNames = []string{
	"mcp__acpterm__exec_command",
	"acpterm_exec_command",
	"mcp.acpterm.exec_command",
	"exec_command (acpterm MCP Server)",
}

// callSeen is what an update or permission request said of a tool call.
type callSeen struct {
	title string
	input json.RawMessage
	meta  acp.Meta
}

// argsTie is a terminal waiting for a tool call whose rawInput is args.
type argsTie struct {
	key      termKey
	args     string
	released *terminal.Info // when released meanwhile
	at       time.Time      // when released
}

// releasedTieWindow is how long a released terminal waits for its call:
// opencode's comes at once; one that never comes must not keep making
// the next command with the same arguments ambiguous.
const releasedTieWindow = 10 * time.Second

// pruneLocked drops the released terminals that waited too long. t.mu
// is held.
func (t *Ties) pruneLocked() {
	now := t.now()
	t.byArgs = slices.DeleteFunc(t.byArgs, func(a argsTie) bool {
		return a.released != nil && now.Sub(a.at) > releasedTieWindow
	})
}

// namesExecTool reports whether a title or _meta.toolName is one of
// execToolNames.
func (s callSeen) namesExecTool() bool {
	if slices.Contains(execToolNames, s.title) {
		return true
	}
	var name string
	raw := s.meta["toolName"]
	return len(raw) > 0 && len(raw) <= 256 && json.Unmarshal(raw, &name) == nil && slices.Contains(execToolNames, name)
}

// canonicalArgs is an object's JSON with its keys sorted and its
// whitespace dropped (numbers as written): false when raw is no object
// or longer than maxTieInput.
func canonicalArgs(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || len(raw) > maxTieInput {
		return "", false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if d.Decode(&v) != nil || v == nil || d.Decode(new(any)) != io.EOF {
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxTieInput {
		return "", false
	}
	return string(b), true
}

// seeLocked records what an update said of running call c, and returns
// the waiting terminal it now ties to (the caller fills in the call), if
// exactly one waits and c is the only candidate. t.mu is held.
func (t *Ties) seeLocked(c *runningCall, s callSeen) (pendingTie, bool) {
	if s.namesExecTool() {
		c.names = true
	}
	if len(s.input) > 0 {
		c.input, _ = canonicalArgs(s.input)
	}
	if c.tied || !c.names || c.input == "" || t.candidatesLocked(c.input) != 1 {
		return pendingTie{}, false
	}
	t.pruneLocked()
	at := -1
	for i, a := range t.byArgs {
		if a.args == c.input {
			if at >= 0 {
				return pendingTie{}, false // two terminals with these arguments
			}
			at = i
		}
	}
	if at < 0 {
		return pendingTie{}, false
	}
	a := t.byArgs[at]
	t.byArgs = slices.Delete(t.byArgs, at, at+1)
	return pendingTie{key: a.key, released: a.released}, true
}

// candidatesLocked counts the running untied calls that name the tool
// with rawInput args. t.mu is held.
func (t *Ties) candidatesLocked(args string) int {
	n := 0
	for _, c := range t.running {
		if !c.tied && c.names && c.input == args {
			n++
		}
	}
	return n
}

// hintArgs ties a terminal whose tools/call named no tool call by its
// arguments: now, to the one candidate; later, to the first call that
// becomes the only one, if none is now; never, with two or more now, or
// while another terminal with the same arguments waits.
func (t *Ties) hintArgs(key termKey, raw json.RawMessage) {
	args, ok := canonicalArgs(raw)
	if !ok {
		return
	}
	t.mu.Lock()
	if _, ok := t.infos[key]; !ok {
		t.mu.Unlock()
		return
	}
	t.pruneLocked()
	var call acp.ToolCallID
	n := 0
	for id, c := range t.running {
		if !c.tied && c.names && c.input == args {
			call = id
			n++
		}
	}
	if slices.ContainsFunc(t.byArgs, func(a argsTie) bool { return a.args == args }) {
		n = 0 // another terminal waits with these: neither is tied
	}
	if n == 0 {
		if len(t.byArgs) >= maxPendingTies {
			t.byArgs = t.byArgs[1:]
		}
		t.byArgs = append(t.byArgs, argsTie{key: key, args: args})
	}
	t.mu.Unlock()
	if n == 1 {
		t.tie(pendingTie{call: call, key: key})
	}
}

// Permission follows a session/request_permission once it is answered
// (allowed: with an option that allows): what its toolCall says of a tool
// call the agent already reported running in the run's session (Qwen Code
// sends the arguments only there). An allowed request that names the
// offered exec_command also starts a call the agent has not reported:
// Gemini CLI reports a call it asks about only once the call has ended,
// and sends its arguments only as the request's content, their JSON as
// text (argsInContent).
func (t *Ties) Permission(req *acp.RequestPermissionRequest, allowed bool) {
	if t == nil {
		return
	}
	if sid := t.sid(); sid == "" || req.SessionID != sid {
		return
	}
	u := req.ToolCall
	s := callSeen{input: u.RawInput, meta: u.Meta}
	if u.Title != nil {
		s.title = *u.Title
	}
	if len(s.input) == 0 {
		s.input = argsInContent(u.Content)
	}
	var ready []pendingTie
	t.mu.Lock()
	c := t.running[u.ToolCallID]
	if c == nil && allowed && s.namesExecTool() && len(u.ToolCallID) <= mcpexec.MaxToolCallHint {
		c, ready = t.startLocked(u.ToolCallID)
	}
	if c != nil {
		if p, ok := t.seeLocked(c, s); ok {
			p.call = u.ToolCallID
			ready = append(ready, p)
		}
	}
	t.mu.Unlock()
	for _, p := range ready {
		t.tie(p)
	}
}

// argsInContent is the one text of content when it is a JSON object (as
// Gemini CLI puts an MCP call's arguments in its permission request), else
// nil.
func argsInContent(content []acp.ToolCallContent) json.RawMessage {
	if len(content) != 1 {
		return nil
	}
	c, ok := content[0].(*acp.Content)
	if !ok {
		return nil
	}
	tc, ok := c.Content.(*acp.TextContent)
	if !ok {
		return nil
	}
	text := strings.TrimSpace(tc.Text)
	if !strings.HasPrefix(text, "{") {
		return nil
	}
	if _, ok := canonicalArgs(json.RawMessage(text)); !ok {
		return nil
	}
	return json.RawMessage(text)
}
