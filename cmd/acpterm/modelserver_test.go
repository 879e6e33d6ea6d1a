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
	// Args are set in the tool call's arguments besides the command,
	// each where the tool's schema has such a property (Claude Code's
	// Bash run_in_background, say).
	Args map[string]any
	// Prefer, when set, picks the tool to call before the shell tools:
	// the first offered whose name it accepts (an MCP server's).
	Prefer func(name string) bool
	// maxBody and maxCalls bound a request's body and the calls answered
	// (maxModelBody, maxModelCalls; smaller in the server's own test).
	maxBody  int64
	maxCalls int

	mu    sync.Mutex
	calls []modelCall
	auths []string // each request's credential headers (Auths)
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

// Auths returns the credential headers of each request so far, as
// "x-api-key=… authorization=… x-goog-api-key=…".
func (m *modelServer) Auths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.auths)
}

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if len(m.auths) < m.maxCalls {
		m.auths = append(m.auths, "x-api-key="+r.Header.Get("X-Api-Key")+" authorization="+r.Header.Get("Authorization")+
			" x-goog-api-key="+r.Header.Get("X-Goog-Api-Key"))
	}
	m.mu.Unlock()
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
	// namespace is the group of a tool that codex offers inside a
	// namespace tool (an MCP server's: mcp__SERVER), which its call
	// names; name is then namespace__call.
	namespace, call string
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

// toolArgs are the arguments of the call to t: shellArgs, and m.Args
// that t's schema has.
func (m *modelServer) toolArgs(t tool) map[string]any {
	args := shellArgs(t, m.Command)
	props, _ := t.schema["properties"].(map[string]any)
	for k, v := range m.Args {
		if _, ok := props[k]; ok {
			args[k] = v
		}
	}
	return args
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
	if m.Prefer != nil {
		for _, t := range tools {
			if m.Prefer(t.name) {
				return t, "", true
			}
		}
	}
	if t, ok := pickShell(tools); ok {
		return t, "", true
	}
	return tool{}, "ok", false
}
