package acp

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// genParseObject must split every valid JSON object exactly as
// encoding/json does (same names, same values), and on anything else fail
// or at least not panic.
func FuzzGenParseObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, ` { "a" : 1 , "b":[1,{"c":"}"}], "d":"x\"y\\"} `,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`,
		`{"k\u0041":true,"k\u0041":false}`, `{"a":"\\\\"}`, `{"a":{"b":[]}}x`, `[1]`, `"s"`, `{"a"}`, `{"a":}`,
		`{"é":null}`, "{\"\xff\":1}", `{"a":1,}`, `{"a":"b\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := genParseObject(b)
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(b, &want)
		if wantErr != nil {
			return // invalid JSON never reaches genParseObject; not panicking is enough
		}
		trimmed := bytes.TrimSpace(b)
		if trimmed[0] != '{' && string(trimmed) != "null" {
			if err == nil {
				t.Fatalf("%q: no error for a non-object", b)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, encoding/json finds %d", b, len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok || !bytes.Equal(g, w) {
				t.Fatalf("%q: member %q is %q, encoding/json says %q", b, k, g, w)
			}
		}
	})
}

func TestGenPlainString(t *testing.T) {
	for _, s := range []string{`"plain"`, `""`, `"a\"b"`, `"tab\there"`, "\"raw\x01\"", "\"\xff\"", `"é"`, `"\u00e9"`} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			continue
		}
		got, err := genJSON[string]([]byte(s))
		if err != nil || got != want {
			t.Errorf("genJSON[string](%q) = %q, %v; want %q", s, got, err, want)
		}
	}
}

// A 24 MiB text inside four levels of objects is decoded with one copy of
// the text, not one per level.
func TestGenDecodeLargeNoCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 24 MiB")
	}
	text := strings.Repeat("a", 24<<20)
	line := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}}`)
	var n SessionNotification
	var ms runtimeMem
	before := ms.total()
	if err := json.Unmarshal(line, &n); err != nil {
		t.Fatal(err)
	}
	got := ms.total() - before
	// One copy of the text, and small change.
	if got > uint64(len(text))+1<<20 {
		t.Errorf("decoding allocated %d bytes for a %d-byte text: more than one copy", got, len(text))
	}
	if c, ok := n.Update.(*AgentMessageChunk); !ok || c.Content.(*TextContent).Text != text {
		t.Fatalf("decoded %T", n.Update)
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{}

func (runtimeMem) total() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.TotalAlloc
}
