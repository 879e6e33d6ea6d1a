//go:build realagents

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// modelServer is a scripted model on 127.0.0.1 for real agents: it speaks
// the APIs they call (OpenAI Responses and chat completions, Anthropic
// Messages, Gemini generateContent), and answers every conversation the
// same way. A request that offers the agent's shell tool and carries no
// tool result gets a call of that tool running the server's command; a
// request that carries a tool result gets the final reply; any other
// request (a title, a classifier, a check) gets a short text or the JSON
// its schema asks for. So a turn is: prompt → shell call → its result →
// reply.
//
// It is bounded like any server facing a program it does not control:
// request bodies are capped, every connection has deadlines, and past
// maxModelCalls requests it answers 429, so an agent in a loop ends.
type modelServer struct {
	srv *httptest.Server
	// Command is the shell line the tool call runs; Output what it prints
	// (not a substring of Command, so that seeing it proves it ran).
	Command, Output string
	// Reply is the final text of the turn.
	Reply string
	// maxBody and maxCalls bound a request's body and the calls answered
	// (maxModelBody, maxModelCalls; smaller in the server's own test).
	maxBody  int64
	maxCalls int

	mu    sync.Mutex
	calls []modelCall
}

// modelCall is one request the server answered.
type modelCall struct {
	API  string // "responses", "chat", "anthropic", "gemini", or "other"
	Path string
	// Tool is the shell tool called, "" when the answer was text.
	Tool string
	// Result is the tool result the request carried, if any.
	Result string
}

const (
	maxModelBody  = 32 << 20 // agents send their whole context each time
	maxModelCalls = 200
)

// newModelServer starts a server whose tool call prints marker.
func newModelServer(marker string) *modelServer {
	m := &modelServer{
		// printf's two arguments: the marker appears in the output only.
		Command:  fmt.Sprintf("printf '%%s-%%s\\n' acpterm-real %s", marker),
		Output:   "acpterm-real-" + marker,
		Reply:    "acpterm-reply-" + marker + " done.",
		maxBody:  maxModelBody,
		maxCalls: maxModelCalls,
	}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(m.serve))
	m.srv.Config.ReadHeaderTimeout = 10 * time.Second
	m.srv.Config.ReadTimeout = 30 * time.Second
	m.srv.Config.WriteTimeout = 30 * time.Second
	m.srv.Config.IdleTimeout = 30 * time.Second
	m.srv.Config.MaxHeaderBytes = 64 << 10
	m.srv.Start()
	return m
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (m *modelServer) URL() string { return m.srv.URL }

// Close stops the server and its connections.
func (m *modelServer) Close() {
	m.srv.CloseClientConnections()
	m.srv.Close()
}

// Calls returns the requests answered so far.
func (m *modelServer) Calls() []modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// ToolCalled reports whether a shell tool call was sent, and whether a
// result carrying the command's output came back: the command ran.
func (m *modelServer) ToolCalled() (called, ran bool) {
	for _, c := range m.Calls() {
		called = called || c.Tool != ""
		ran = ran || strings.Contains(c.Result, m.Output)
	}
	return called, ran
}

func (m *modelServer) record(c modelCall) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) >= m.maxCalls {
		return false
	}
	m.calls = append(m.calls, c)
	return true
}

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		// Model lists and health checks: an empty list.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/responses"):
		m.responses(w, path, req)
	case strings.HasSuffix(path, "/chat/completions"):
		m.chat(w, path, req)
	case strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case strings.HasSuffix(path, "/messages"):
		m.anthropic(w, path, req)
	case strings.HasSuffix(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	case strings.Contains(path, ":generateContent"), strings.Contains(path, ":streamGenerateContent"):
		m.gemini(w, r, path, req)
	default:
		if !m.record(modelCall{API: "other", Path: path}) {
			http.Error(w, "too many calls", http.StatusTooManyRequests)
			return
		}
		writeJSON(w, map[string]any{})
	}
}

// shellTools are the names agents give their shell tool, most specific
// first.
var shellTools = []string{"shell", "shell_command", "exec_command", "local_shell", "Bash", "bash",
	"run_shell_command", "run_shell", "execute", "exec", "terminal", "run_command"}

// tool is a function tool offered in a request: its name and the JSON
// schema of its arguments.
type tool struct {
	name   string
	schema map[string]any
}

// pickShell returns the shell tool among tools, or false.
func pickShell(tools []tool) (tool, bool) {
	for _, n := range shellTools {
		for _, t := range tools {
			if t.name == n {
				return t, true
			}
		}
	}
	return tool{}, false
}

// shellArgs fills the arguments of t's schema so that it runs command: the
// command property ("command" or "cmd") as a string or, for an array, as
// bash -lc COMMAND; every other required property a harmless value.
func shellArgs(t tool, command string) map[string]any {
	args := map[string]any{}
	props, _ := t.schema["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := t.schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	set := false
	for _, name := range []string{"command", "cmd"} {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		if typeOf(p) == "array" {
			args[name] = []string{"bash", "-lc", command}
		} else {
			args[name] = command
		}
		set = true
		break
	}
	if !set {
		args["command"] = command
	}
	for name := range required {
		if _, done := args[name]; done {
			continue
		}
		p, _ := props[name].(map[string]any)
		args[name] = sampleValue(name, p)
	}
	// Optional fields some agents read without requiring them.
	if _, ok := props["description"]; ok {
		args["description"] = "Print the marker"
	}
	return args
}

func typeOf(schema map[string]any) string {
	switch t := schema["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok && s != "null" {
				return strings.ToLower(s)
			}
		}
	}
	return ""
}

// sampleValue is a value of the kind schema asks for: the first enum
// value, false, 0, an empty list, or a short string.
func sampleValue(name string, schema map[string]any) any {
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch typeOf(schema) {
	case "boolean":
		return false
	case "integer", "number":
		if strings.Contains(strings.ToLower(name), "timeout") {
			return 30000
		}
		return 1
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

// schemaReply is a JSON object filling the properties of schema, for a
// request that asks for structured output (gemini's next-speaker check and
// its model router).
func schemaReply(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	for name, p := range props {
		ps, _ := p.(map[string]any)
		switch name {
		case "next_speaker":
			out[name] = "user"
		case "reasoning":
			out[name] = "the turn is complete"
		default:
			out[name] = sampleValue(name, ps)
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// answer decides a request's answer: the shell tool to call (ok), or the
// text to reply. result is the tool result the request carries.
func (m *modelServer) answer(tools []tool, result string, hasResult bool) (t tool, text string, call bool) {
	if hasResult {
		return tool{}, m.Reply, false
	}
	if t, ok := pickShell(tools); ok {
		return t, "", true
	}
	return tool{}, "ok", false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; an empty name writes a data line only.
func (s *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) raw(line string) {
	fmt.Fprintf(s.w, "%s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

func str(v any) string { s, _ := v.(string); return s }

// contentText is the text of a content value: a string, or a list of
// parts with text (or output) fields, joined.
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				b.WriteString(str(pm["text"]))
				b.WriteString(contentText(pm["content"]))
				b.WriteString(contentText(pm["output"]))
			}
		}
		return b.String()
	case map[string]any:
		b, _ := json.Marshal(c)
		return string(b)
	}
	return ""
}

// --- OpenAI Responses (codex) ---

func (m *modelServer) responses(w http.ResponseWriter, path string, req map[string]any) {
	var tools []tool
	for _, t := range listOf(req["tools"]) {
		name := str(t["name"])
		if name == "" {
			name = str(t["type"]) // local_shell has no name
		}
		params, _ := t["parameters"].(map[string]any)
		tools = append(tools, tool{name: name, schema: params})
	}
	result, has := "", false
	for _, it := range listOf(req["input"]) {
		switch str(it["type"]) {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			has = true
			result += contentText(it["output"])
		}
	}
	t, text, call := m.answer(tools, result, has)
	if !m.record(modelCall{API: "responses", Path: path, Tool: t.name, Result: result}) {
		http.Error(w, "too many calls", http.StatusTooManyRequests)
		return
	}
	s := newSSE(w)
	id := fmt.Sprintf("resp_%d", len(m.Calls()))
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	var item map[string]any
	if call {
		args, _ := json.Marshal(shellArgs(t, m.Command))
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": t.name, "arguments": string(args), "status": "completed"}
	} else {
		s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "in_progress", "content": []any{}}})
		s.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "delta": text, "item_id": "msg_" + id, "output_index": 0, "content_index": 0})
		item = map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	s.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 5, "output_tokens_details": nil, "total_tokens": 15}}})
}

func listOf(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// --- OpenAI chat completions (qwen, opencode, omp, pi) ---

func (m *modelServer) chat(w http.ResponseWriter, path string, req map[string]any) {
	var tools []tool
	for _, t := range listOf(req["tools"]) {
		fn, _ := t["function"].(map[string]any)
		params, _ := fn["parameters"].(map[string]any)
		tools = append(tools, tool{name: str(fn["name"]), schema: params})
	}
	result, has := "", false
	for _, msg := range listOf(req["messages"]) {
		if str(msg["role"]) == "tool" {
			has = true
			result += contentText(msg["content"])
		}
	}
	t, text, call := m.answer(tools, result, has)
	if !m.record(modelCall{API: "chat", Path: path, Tool: t.name, Result: result}) {
		http.Error(w, "too many calls", http.StatusTooManyRequests)
		return
	}
	model := str(req["model"])
	id := fmt.Sprintf("chatcmpl-%d", len(m.Calls()))
	var toolCalls []any
	finish := "stop"
	if call {
		args, _ := json.Marshal(shellArgs(t, m.Command))
		toolCalls = []any{map[string]any{"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]any{"name": t.name, "arguments": string(args)}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if stream, _ := req["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": text}
		if call {
			msg["content"] = nil
			msg["tool_calls"] = toolCalls
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	if call {
		chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": toolCalls}, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": text}, nil)
	}
	chunk(map[string]any{}, finish)
	s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": []any{}, "usage": usage})
	s.raw("data: [DONE]")
}

// --- Anthropic Messages (claude) ---

func (m *modelServer) anthropic(w http.ResponseWriter, path string, req map[string]any) {
	var tools []tool
	for _, t := range listOf(req["tools"]) {
		schema, _ := t["input_schema"].(map[string]any)
		tools = append(tools, tool{name: str(t["name"]), schema: schema})
	}
	result, has := "", false
	for _, msg := range listOf(req["messages"]) {
		for _, part := range listOf(msg["content"]) {
			if str(part["type"]) == "tool_result" {
				has = true
				result += contentText(part["content"])
			}
		}
	}
	t, text, call := m.answer(tools, result, has)
	if !m.record(modelCall{API: "anthropic", Path: path, Tool: t.name, Result: result}) {
		http.Error(w, "too many calls", http.StatusTooManyRequests)
		return
	}
	model := str(req["model"])
	id := fmt.Sprintf("msg_%d", len(m.Calls()))
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	stop := "end_turn"
	var block map[string]any
	if call {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": t.name, "input": shellArgs(t, m.Command)}
	} else {
		block = map[string]any{"type": "text", "text": text}
	}
	if stream, _ := req["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	if call {
		input, _ := json.Marshal(block["input"])
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": t.name, "input": map[string]any{}}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// --- Gemini (gemini-cli) ---

func (m *modelServer) gemini(w http.ResponseWriter, r *http.Request, path string, req map[string]any) {
	var tools []tool
	for _, t := range listOf(req["tools"]) {
		for _, fd := range listOf(t["functionDeclarations"]) {
			schema, _ := fd["parametersJsonSchema"].(map[string]any)
			if schema == nil {
				schema, _ = fd["parameters"].(map[string]any)
			}
			tools = append(tools, tool{name: str(fd["name"]), schema: schema})
		}
	}
	result, has := "", false
	for _, c := range listOf(req["contents"]) {
		for _, part := range listOf(c["parts"]) {
			if fr, ok := part["functionResponse"].(map[string]any); ok {
				has = true
				result += contentText(fr["response"])
			}
		}
	}
	t, text, call := m.answer(tools, result, has)
	if gc, ok := req["generationConfig"].(map[string]any); ok && !call && !has {
		schema, _ := gc["responseJsonSchema"].(map[string]any)
		if schema == nil {
			schema, _ = gc["responseSchema"].(map[string]any)
		}
		if schema != nil {
			text = schemaReply(schema)
		}
	}
	if !m.record(modelCall{API: "gemini", Path: path, Tool: t.name, Result: result}) {
		http.Error(w, "too many calls", http.StatusTooManyRequests)
		return
	}
	var part map[string]any
	if call {
		part = map[string]any{"functionCall": map[string]any{"name": t.name, "args": shellArgs(t, m.Command)}}
	} else {
		part = map[string]any{"text": text}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "mock",
	}
	if !strings.Contains(path, ":streamGenerateContent") {
		writeJSON(w, resp)
		return
	}
	s := newSSE(w)
	s.event("", resp)
}
