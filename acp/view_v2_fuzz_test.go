package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSessionView applies arbitrary session updates, one per line of the input, to a
// SessionView. It must not panic, keep at most MaxViewTerminalOutput bytes of a terminal's
// output, and hand out tool calls and terminals that encode.
func FuzzSessionView(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden_v2", "V2UpdateSessionNotification.*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","title":"x"}}
{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","title":null,"content":[]}}
{"sessionId":"s","update":{"sessionUpdate":"tool_call_content_chunk","toolCallId":"t","content":{"type":"content","content":{"type":"text","text":"a"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := &SessionView{}
		dec := json.NewDecoder(bytes.NewReader(data))
		for dec.More() {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				break
			}
			var n V2UpdateSessionNotification
			if json.Unmarshal(raw, &n) != nil {
				continue
			}
			var env struct {
				Update json.RawMessage `json:"update"`
			}
			_ = json.Unmarshal(raw, &env)
			v.apply(n.Update, env.Update)
		}
		for _, tc := range v.ToolCalls() {
			if _, err := json.Marshal(tc); err != nil {
				t.Fatalf("tool call %+v does not encode: %v", tc, err)
			}
		}
		for _, term := range v.Terminals() {
			if _, err := json.Marshal(term); err != nil {
				t.Fatalf("terminal %+v does not encode: %v", term, err)
			}
			if n := len(v.TerminalOutput(term.TerminalID)); n > MaxViewTerminalOutput {
				t.Fatalf("terminal output of %d bytes", n)
			}
		}
		v.Background()
		v.Messages()
	})
}
