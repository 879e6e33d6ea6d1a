//go:build realagents

package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends body to the model server and returns the status and the
// response: the JSON body, or the data of each server-sent event joined
// by newlines.
func post(t *testing.T, m *modelServer, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(m.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, string(b)
	}
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return resp.StatusCode, strings.Join(data, "\n")
}

// TestModelServerScript: in each API, a request offering the shell tool
// gets a call of it whose arguments run the command (as a string or an
// argv, per the tool's schema); the request carrying the result gets the
// reply; one with no shell tool gets plain text.
func TestModelServerScript(t *testing.T) {
	t.Parallel()
	m := newModelServer("T1")
	defer m.Close()
	if strings.Contains(m.Command, m.Output) {
		t.Fatalf("the command %q shows its output %q: seeing it would prove nothing", m.Command, m.Output)
	}
	tests := []struct {
		name, path, first, second string
		wantCall                  []string // in the first answer
	}{
		{"responses argv", "/v1/responses",
			`{"stream":true,"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array"}},"required":["command"]}}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`,
			`{"stream":true,"tools":[{"type":"function","name":"shell"}],"input":[{"type":"function_call_output","call_id":"c","output":"acpterm-real-T1\n"}]}`,
			[]string{`"type":"function_call"`, `"name":"shell"`, `\"bash\",\"-lc\"`, "acpterm-real T1"}},
		{"chat stream", "/v1/chat/completions",
			`{"stream":true,"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command","timeout"]}}}],"messages":[{"role":"user","content":"hi"}]}`,
			`{"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c","content":"acpterm-real-T1"}]}`,
			[]string{`"tool_calls"`, `"name":"bash"`, `\"timeout\":30000`, `"finish_reason":"tool_calls"`}},
		{"chat plain", "/v1/chat/completions",
			`{"tools":[{"type":"function","function":{"name":"Bash","parameters":{"properties":{"command":{"type":"string"}}}}}],"messages":[{"role":"user","content":"hi"}]}`,
			`{"messages":[{"role":"tool","content":[{"type":"text","text":"acpterm-real-T1"}]}]}`,
			[]string{`"object":"chat.completion"`, `"name":"Bash"`}},
		{"anthropic", "/v1/messages?beta=true",
			`{"stream":true,"tools":[{"name":"Read","input_schema":{}},{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command"]}}],"messages":[{"role":"user","content":"hi"}]}`,
			`{"stream":true,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"acpterm-real-T1"}]}]}]}`,
			[]string{`"type":"tool_use"`, `"name":"Bash"`, `input_json_delta`, `"stop_reason":"tool_use"`}},
		{"gemini sse", "/v1beta/models/m:streamGenerateContent?alt=sse",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]}]}`,
			`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"acpterm-real-T1"}}}]}]}`,
			[]string{`"functionCall"`, `"name":"run_shell_command"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, first := post(t, m, tt.path, tt.first)
			if code != http.StatusOK {
				t.Fatalf("first call: status %d: %s", code, first)
			}
			// The command's words, whichever way its argument is quoted.
			for _, want := range append(tt.wantCall, "acpterm-real T1") {
				if !strings.Contains(first, want) && !strings.Contains(first, strings.ReplaceAll(want, `"`, `\"`)) {
					t.Errorf("first answer lacks %s:\n%s", want, first)
				}
			}
			if strings.Contains(first, m.Reply) {
				t.Errorf("first answer already replies:\n%s", first)
			}
			code, second := post(t, m, tt.path, tt.second)
			if code != http.StatusOK || !strings.Contains(second, m.Reply) {
				t.Errorf("second call: status %d, want the reply %q:\n%s", code, m.Reply, second)
			}
		})
	}
	if called, ran := m.ToolCalled(); !called || !ran {
		t.Errorf("ToolCalled() = %v, %v after a call and its results", called, ran)
	}
	// No shell tool: a text, and a structured request its JSON.
	if _, got := post(t, m, "/v1/chat/completions", `{"messages":[{"role":"user","content":"title?"}]}`); !strings.Contains(got, `"content":"ok"`) {
		t.Errorf("a request without tools: %s", got)
	}
	_, got := post(t, m, "/v1beta/models/m:generateContent", `{"contents":[],"generationConfig":{"responseJsonSchema":{"properties":{"next_speaker":{"type":"string","enum":["model","user"]},"reasoning":{"type":"string"}}}}}`)
	if !strings.Contains(got, `next_speaker\":\"user\"`) {
		t.Errorf("a structured request: %s", got)
	}
}

// TestModelServerBounds: an oversized body is refused, and past
// maxModelCalls every call is, so an agent in a loop stops.
func TestModelServerBounds(t *testing.T) {
	t.Parallel()
	m := newModelServer("T2")
	defer m.Close()
	// The limits the agents get are 32 MiB and 200 calls: the same code
	// with smaller ones.
	m.maxBody, m.maxCalls = 64<<10, 20
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", int(m.maxBody)) + `"}]}`
	if code, _ := post(t, m, "/v1/chat/completions", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a %d-byte body: status %d, want 413", len(big), code)
	}
	if code, _ := post(t, m, "/v1/chat/completions", "not json"); code != http.StatusBadRequest {
		t.Errorf("not JSON: status %d, want 400", code)
	}
	last := 0
	for range m.maxCalls + 1 {
		last, _ = post(t, m, "/v1/chat/completions", `{"messages":[]}`)
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("call %d: status %d, want 429", m.maxCalls+1, last)
	}
	if n := len(m.Calls()); n != m.maxCalls {
		t.Errorf("%d calls recorded, want %d", n, m.maxCalls)
	}
}
