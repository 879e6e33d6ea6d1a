//go:build realagents

package main

// The wire forms of the four APIs the model server speaks: OpenAI's
// Responses and chat completions, Anthropic's messages and Gemini's
// generateContent, each streamed as the agents ask.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

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
		for _, sub := range listOf(t["tools"]) {
			params, _ := sub["parameters"].(map[string]any)
			tools = append(tools, tool{name: name + "__" + str(sub["name"]), schema: params, namespace: name, call: str(sub["name"])})
		}
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
		args, _ := json.Marshal(m.toolArgs(t))
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": t.name, "arguments": string(args), "status": "completed"}
		if t.namespace != "" {
			item["name"], item["namespace"] = t.call, t.namespace
		}
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
		args, _ := json.Marshal(m.toolArgs(t))
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
		block = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": t.name, "input": m.toolArgs(t)}
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
		part = map[string]any{"functionCall": map[string]any{"name": t.name, "args": m.toolArgs(t)}}
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
