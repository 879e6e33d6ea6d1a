package acp

import (
	"bytes"
	"encoding/json"
	"sync"
)

// SessionView is what a v2 client has heard of one session so far, with
// v2's upserts applied: the current state and background list, and the
// current form of each tool call, terminal and message. A ClientConn that
// negotiated v2 keeps one per session (ClientConn.View) and applies every
// session/update to it before the Client's handler sees the update, so a
// handler (or a UI reacting to it) reads a view that already includes the
// update it was given.
//
// Upserts follow the schema's patch rules: a member left out of an update
// leaves the current value, null clears it, a value replaces it (an array
// as a whole); tool_call_content_chunk appends to a tool call's content,
// a message chunk to its message's content, terminal_output_chunk to its
// terminal's output (of which the view keeps the last
// MaxViewTerminalOutput bytes). Values handed out are copies.
type SessionView struct {
	mu         sync.Mutex
	state      V2State
	background []V2BackgroundWork
	reported   bool // the last state update listed background work
	toolCalls  patched
	terminals  patched
	output     map[TerminalID][]byte
	messages   []*ViewMessage
	byID       map[MessageID]*ViewMessage
	usage      *UsageUpdate
}

// MaxViewTerminalOutput bounds the output a SessionView keeps per
// terminal: the newest bytes.
const MaxViewTerminalOutput = 1 << 20

// ViewMessage is one message of a SessionView.
type ViewMessage struct {
	ID MessageID
	// Kind is the session update that carries it: "user_message",
	// "agent_message" or "agent_thought".
	Kind    string
	Content []V2ContentBlock
}

// BackgroundItem is one entry of the background list of the last state
// update, with the current form of what it names: Terminal for a
// terminal, ToolCall for a tool call (the other nil). An item the agent
// did not announce first has only its ID set. Cancellable says whether it
// advertises capabilities.cancel, which ClientConn.CancelTerminal and
// CancelToolCall require.
type BackgroundItem struct {
	Terminal    *V2TerminalUpdate
	ToolCall    *V2ToolCallUpdate
	Cancellable bool
}

// patched holds upserted JSON objects by id, in the order they appeared.
type patched struct {
	order []string
	objs  map[string]map[string]json.RawMessage
}

// apply merges the members of obj into the object with the given id and
// reports whether the id was new.
func (p *patched) apply(id string, obj map[string]json.RawMessage) bool {
	if p.objs == nil {
		p.objs = map[string]map[string]json.RawMessage{}
	}
	cur, ok := p.objs[id]
	if !ok {
		cur = map[string]json.RawMessage{}
		p.objs[id] = cur
		p.order = append(p.order, id)
	}
	for k, v := range obj {
		if k == "sessionUpdate" {
			continue
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(cur, k)
		} else {
			cur[k] = v
		}
	}
	return !ok
}

// appendTo appends item to the array member key of the object id.
func (p *patched) appendTo(id, key string, item json.RawMessage) {
	if p.objs == nil || p.objs[id] == nil {
		p.apply(id, nil)
	}
	var arr []json.RawMessage
	_ = json.Unmarshal(p.objs[id][key], &arr)
	arr = append(arr, item)
	p.objs[id][key], _ = json.Marshal(arr)
}

// get decodes the object id into v; false if there is none.
func (p *patched) get(id string, v any) bool {
	obj, ok := p.objs[id]
	if !ok {
		return false
	}
	b, err := json.Marshal(obj)
	return err == nil && json.Unmarshal(b, v) == nil
}

// apply takes one update: u decoded, raw its JSON object.
func (v *SessionView) apply(u V2SessionUpdate, raw json.RawMessage) (fresh bool) {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	v.mu.Lock()
	defer v.mu.Unlock()
	switch u := u.(type) {
	case *V2StateUpdate:
		v.state = u.State
		v.background, v.reported = nil, false
		switch s := u.State.(type) {
		case *V2RunningStateUpdate:
			v.background, v.reported = s.Background, s.Background != nil
		case *V2IdleStateUpdate:
			v.background, v.reported = s.Background, s.Background != nil
		case *V2RequiresActionStateUpdate:
			v.background, v.reported = s.Background, s.Background != nil
		}
	case *UsageUpdate:
		c := *u
		v.usage = &c
	case *V2ToolCallUpdate:
		return v.toolCalls.apply(string(u.ToolCallID), obj)
	case *V2ToolCallContentChunk:
		v.toolCalls.appendTo(string(u.ToolCallID), "content", obj["content"])
	case *V2TerminalUpdate:
		fresh = v.terminals.apply(string(u.TerminalID), obj)
		if _, ok := obj["output"]; ok {
			v.setOutput(u.TerminalID, nil)
			if u.Output != nil {
				v.setOutput(u.TerminalID, u.Output.Data)
			}
		}
		return fresh
	case *V2TerminalOutputChunk:
		v.setOutput(u.TerminalID, append(v.output[u.TerminalID], u.Data...))
	case *V2UserMessage:
		return v.message("user_message", u.MessageID, obj, u.Content, nil)
	case *V2AgentMessage:
		return v.message("agent_message", u.MessageID, obj, u.Content, nil)
	case *V2AgentThought:
		return v.message("agent_thought", u.MessageID, obj, u.Content, nil)
	case *V2UserMessageChunk:
		return v.message("user_message", u.MessageID, nil, nil, u.Content)
	case *V2AgentMessageChunk:
		return v.message("agent_message", u.MessageID, nil, nil, u.Content)
	case *V2AgentThoughtChunk:
		return v.message("agent_thought", u.MessageID, nil, nil, u.Content)
	}
	return false
}

func (v *SessionView) setOutput(id TerminalID, b []byte) {
	if v.output == nil {
		v.output = map[TerminalID][]byte{}
	}
	if len(b) > MaxViewTerminalOutput {
		b = append([]byte(nil), b[len(b)-MaxViewTerminalOutput:]...)
	}
	v.output[id] = b
}

// message upserts a message (obj: its members, content: its content
// decoded) or appends a chunk to it.
func (v *SessionView) message(kind string, id MessageID, obj map[string]json.RawMessage, content []V2ContentBlock, chunk V2ContentBlock) bool {
	m, ok := v.byID[id]
	if !ok {
		if v.byID == nil {
			v.byID = map[MessageID]*ViewMessage{}
		}
		m = &ViewMessage{ID: id, Kind: kind}
		v.byID[id] = m
		v.messages = append(v.messages, m)
	}
	if chunk != nil {
		m.Content = append(m.Content, chunk)
	}
	if _, present := obj["content"]; present {
		// A value replaces the content as a whole; null and [] clear it.
		m.Content = append([]V2ContentBlock(nil), content...)
	}
	return !ok
}

// State returns the state of the last state update (a *V2RunningStateUpdate,
// *V2IdleStateUpdate, *V2RequiresActionStateUpdate or *V2UnknownState), or
// nil before the first: a new session is idle until told otherwise.
func (v *SessionView) State() V2State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.state
}

// Background returns the background work the last state update listed,
// joined with the current form of each item, and whether it listed any:
// false means not reported (nothing is to be taken as ended), true with
// no items means none is running.
func (v *SessionView) Background() (items []BackgroundItem, reported bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, w := range v.background {
		switch w := w.(type) {
		case *V2BackgroundTerminal:
			t := &V2TerminalUpdate{TerminalID: w.TerminalID}
			v.terminals.get(string(w.TerminalID), t)
			items = append(items, BackgroundItem{Terminal: t, Cancellable: t.Capabilities != nil && t.Capabilities.Cancel != nil})
		case *V2BackgroundToolCall:
			tc := &V2ToolCallUpdate{ToolCallID: w.ToolCallID}
			v.toolCalls.get(string(w.ToolCallID), tc)
			items = append(items, BackgroundItem{ToolCall: tc, Cancellable: tc.Capabilities != nil && tc.Capabilities.Cancel != nil})
		}
	}
	return items, v.reported
}

// Usage returns the last usage update (context window and cost), or nil:
// v2 reports a turn's usage this way, not in the idle state update.
func (v *SessionView) Usage() *UsageUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.usage == nil {
		return nil
	}
	c := *v.usage
	return &c
}

// ToolCall returns the current form of a tool call, or nil.
func (v *SessionView) ToolCall(id ToolCallID) *V2ToolCallUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	tc := new(V2ToolCallUpdate)
	if !v.toolCalls.get(string(id), tc) {
		return nil
	}
	return tc
}

// ToolCalls returns every tool call, in the order they appeared.
func (v *SessionView) ToolCalls() []*V2ToolCallUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*V2ToolCallUpdate
	for _, id := range v.toolCalls.order {
		tc := new(V2ToolCallUpdate)
		if v.toolCalls.get(id, tc) {
			out = append(out, tc)
		}
	}
	return out
}

// Terminal returns the current form of a terminal, or nil.
func (v *SessionView) Terminal(id TerminalID) *V2TerminalUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := new(V2TerminalUpdate)
	if !v.terminals.get(string(id), t) {
		return nil
	}
	return t
}

// Terminals returns every terminal, in the order they appeared.
func (v *SessionView) Terminals() []*V2TerminalUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*V2TerminalUpdate
	for _, id := range v.terminals.order {
		t := new(V2TerminalUpdate)
		if v.terminals.get(id, t) {
			out = append(out, t)
		}
	}
	return out
}

// TerminalOutput returns a terminal's output so far (its newest
// MaxViewTerminalOutput bytes).
func (v *SessionView) TerminalOutput(id TerminalID) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	return bytes.Clone(v.output[id])
}

// Messages returns every message, in the order they appeared.
func (v *SessionView) Messages() []ViewMessage {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]ViewMessage, len(v.messages))
	for i, m := range v.messages {
		out[i] = ViewMessage{ID: m.ID, Kind: m.Kind, Content: append([]V2ContentBlock(nil), m.Content...)}
	}
	return out
}

// cancellable reports whether a terminal or tool call advertises
// capabilities.cancel now.
func (v *SessionView) terminalCancellable(id TerminalID) bool {
	t := v.Terminal(id)
	return t != nil && t.Capabilities != nil && t.Capabilities.Cancel != nil
}

func (v *SessionView) toolCallCancellable(id ToolCallID) bool {
	tc := v.ToolCall(id)
	return tc != nil && tc.Capabilities != nil && tc.Capabilities.Cancel != nil
}

// reset forgets everything: a replay rebuilds the view.
func (v *SessionView) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.state, v.background, v.reported = nil, nil, false
	v.toolCalls, v.terminals = patched{}, patched{}
	v.output, v.messages, v.byID, v.usage = nil, nil, nil, nil
}
