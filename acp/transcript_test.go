package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// Wire transcripts: testdata/transcripts/v1.jsonl and v2.jsonl hold every message of one exchange
// between the TypeScript SDK's client and this package's agent, in v1 and in v2, as the interop
// tests recorded them ({"dir": "to_agent"|"to_client", "msg": ...}; ACPTERM_UPDATE_TRANSCRIPTS=1
// go test ./interop writes them anew). Each message must decode as its version's type, and read
// back the same from this package's own encoding; and each exchange must keep its version's rules.

type wireMsg struct {
	dir    string
	id     string // "" for a notification
	method string // for a response: the method of its request
	result bool
	body   json.RawMessage // params or result
	// refused: a request answered with an error (the exchange sends bad
	// params on purpose), not checked against its type
	refused bool
}

func readTranscriptFile(t *testing.T, name string) []wireMsg {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]string{} // dir+id of a request -> method
	index := map[string]int{}      // dir+id of a request -> its place in out
	var out []wireMsg
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Dir string `json:"dir"`
			Msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			} `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m := wireMsg{dir: line.Dir, id: string(line.Msg.ID), method: line.Msg.Method, body: line.Msg.Params}
		switch {
		case m.method != "" && m.id != "":
			methods[m.dir+m.id] = m.method
			index[m.dir+m.id] = len(out)
		case m.method == "":
			other := map[string]string{"to_agent": "to_client", "to_client": "to_agent"}[m.dir]
			m.method, m.result, m.body = methods[other+m.id], true, line.Msg.Result
			if line.Msg.Error != nil {
				m.body = nil // an error answer: nothing typed to check
				if j, ok := index[other+m.id]; ok {
					out[j].refused = true
				}
			}
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return out
}

// checkTypes decodes every message as its method's type and checks the round trip.
func checkTypes(t *testing.T, msgs []wireMsg, methods iter.Seq[acp.MethodInfo]) {
	t.Helper()
	table := map[string]acp.MethodInfo{}
	for m := range methods {
		table[m.Name] = m
	}
	for i, m := range msgs {
		info, ok := table[m.method]
		if m.refused {
			continue
		}
		if !ok || m.body == nil {
			if !ok && m.method != "" && m.method[0] != '_' {
				t.Errorf("message %d: %s is no method of this version", i, m.method)
			}
			continue
		}
		newV := info.Request
		if m.result {
			newV = info.Response
		}
		if newV == nil {
			t.Errorf("message %d: a result for notification %s", i, m.method)
			continue
		}
		v := newV()
		if err := json.Unmarshal(m.body, v); err != nil {
			t.Errorf("message %d (%s): %v\n  %s", i, m.method, err, m.body)
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Errorf("message %d (%s): encoding: %v", i, m.method, err)
			continue
		}
		again := newV()
		if err := json.Unmarshal(enc, again); err != nil || !reflect.DeepEqual(v, again) {
			t.Errorf("message %d (%s): our encoding %s does not read back the same (%v)", i, m.method, enc, err)
		}
	}
}

func TestTranscriptV1(t *testing.T) {
	msgs := readTranscriptFile(t, "v1.jsonl")
	checkTypes(t, msgs, acp.Methods())
	prompts := 0
	for _, m := range msgs {
		if m.method == acp.MethodSessionPrompt && m.result && m.body != nil {
			var r acp.PromptResponse
			if err := json.Unmarshal(m.body, &r); err != nil || r.StopReason == "" {
				t.Errorf("a v1 session/prompt result without a stop reason: %s", m.body)
			}
			prompts++
		}
		if m.method == acp.MethodSessionUpdate && bytes.Contains(m.body, []byte(`"state_update"`)) {
			t.Errorf("a state update in v1: %s", m.body)
		}
	}
	if prompts == 0 {
		t.Error("no answered session/prompt in the v1 transcript")
	}
}

func TestTranscriptV2(t *testing.T) {
	msgs := readTranscriptFile(t, "v2.jsonl")
	checkTypes(t, msgs, acp.V2Methods())
	// The rules of a v2 turn: session/prompt is acknowledged with a message id; the agent reports
	// running before it answers, and the turn ends with an idle state update; every state update
	// lists the background work.
	var open int // prompts sent and not yet ended by an idle state update
	running := false
	for i, m := range msgs {
		switch {
		case m.method == acp.MethodInitialize && m.body != nil:
			var v struct {
				ProtocolVersion int `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.body, &v)
			if v.ProtocolVersion != 2 {
				t.Errorf("message %d: initialize with version %d", i, v.ProtocolVersion)
			}
		case m.method == acp.MethodSessionPrompt && !m.result:
			open++
			running = false
		case m.method == acp.MethodSessionPrompt && m.result && m.body != nil:
			var r acp.V2PromptResponse
			if err := json.Unmarshal(m.body, &r); err != nil || r.MessageID == "" {
				t.Errorf("message %d: a v2 acknowledgement without a message id: %s", i, m.body)
			}
			if !running {
				t.Errorf("message %d: the prompt was acknowledged before the agent reported running", i)
			}
		case m.method == acp.MethodSessionUpdate:
			var n acp.V2UpdateSessionNotification
			if err := json.Unmarshal(m.body, &n); err != nil {
				continue // reported by checkTypes
			}
			su, ok := n.Update.(*acp.V2StateUpdate)
			if !ok {
				continue
			}
			switch st := su.State.(type) {
			case *acp.V2RunningStateUpdate:
				running = true
				if st.Background == nil {
					t.Errorf("message %d: a state update without the background list", i)
				}
			case *acp.V2IdleStateUpdate:
				if st.Background == nil {
					t.Errorf("message %d: a state update without the background list", i)
				}
				if open > 0 && st.StopReason != nil {
					open--
				}
			}
		}
	}
	if open != 0 {
		t.Errorf("%d prompts not ended by an idle state update", open)
	}
}
