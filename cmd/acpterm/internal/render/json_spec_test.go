package render_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/terminal"
)

// The tests here hold --format json to what docs/cli.md ("JSON events")
// promises the programs that parse it.

// checkJSONLines fails unless out is lines each of which is one JSON
// object with an "event", valid UTF-8 with no raw control character.
func checkJSONLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatalf("output does not end in a newline: %q", out)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		short := utf8cut.Head(string(line), 400)
		if !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("not valid UTF-8 JSON: %q", short)
		}
		for _, r := range string(line) {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 {
				t.Fatalf("raw %U in %q", r, short)
			}
		}
		var ev map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber() // numbers beyond float64 are the agent's to send
		if err := dec.Decode(&ev); err != nil || ev["event"] == nil {
			t.Fatalf("line %q: not an event (%v)", short, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// outputOf is the concatenation of a terminal's terminal_output data.
func outputOf(evs []map[string]any, id string) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev["event"] == "terminal_output" && ev["terminalId"] == id {
			b.WriteString(ev["data"].(string))
		}
	}
	return b.String()
}

// TestJSONOutputChunking: docs/cli.md says only the concatenation of a
// terminal's data carries meaning, so it must not depend on where the
// command's output was cut into events: the same bytes, cut anywhere,
// give the same text, the bytes with each run of invalid UTF-8 replaced
// by one U+FFFD.
func TestJSONOutputChunking(t *testing.T) {
	streams := []string{
		"a\xff\xfeb",
		"\xff\xe2\x82x",
		"€\xe2\x82\xff\xf0\x9f\x98",
		"x\xff\xf0\x9f",
		"😀\xed\xa0\x80\xc0\xafz\xe2",
	}
	for _, s := range streams {
		want := strings.ToValidUTF8(s, "\uFFFD")
		cuts := [][]int{nil}
		for i := 1; i < len(s); i++ {
			cuts = append(cuts, []int{i})
		}
		every := []int{}
		for i := 1; i < len(s); i++ {
			every = append(every, i)
		}
		cuts = append(cuts, every)
		for _, cut := range cuts {
			var out bytes.Buffer
			r := render.NewJSON(&out, nil)
			r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "s", TerminalID: "t", Info: &terminal.Info{}})
			prev := 0
			for _, c := range append(cut, len(s)) {
				r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: "t", Data: []byte(s[prev:c])})
				prev = c
			}
			r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: "t", Status: &terminal.ExitStatus{}})
			if got := outputOf(checkJSONLines(t, out.Bytes()), "t"); got != want {
				t.Errorf("%q cut at %v: data %q, want %q", s, cut, got, want)
			}
		}
	}
}

// TestJSONSessionUpdateExactMember: the update written is the member the
// protocol names "update", the one acpterm acted on (member names match
// exactly), not another whose name differs only in case.
func TestJSONSessionUpdateExactMember(t *testing.T) {
	for _, raw := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"real"}},"UPDATE":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"forged"}}}`,
		`{"sessionId":"s","Update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"forged"}},"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"real"}}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		render.NewJSON(&out, nil).SessionUpdate(&n, json.RawMessage(raw))
		evs := checkJSONLines(t, out.Bytes())
		if len(evs) != 1 {
			t.Fatalf("%d events: %s", len(evs), out.Bytes())
		}
		text := evs[0]["update"].(map[string]any)["content"].(map[string]any)["text"]
		if want := n.Update.(*acp.AgentMessageChunk).Content.(*acp.TextContent).Text; text != want {
			t.Errorf("update text %q, acpterm read %q\nraw %s", text, want, raw)
		}
	}
}

// TestJSONLinesHostileAgent: whatever the agent sends, each line is one
// JSON object, valid UTF-8 without raw controls, that decodes to what was
// sent (invalid UTF-8 replaced); numbers beyond 2^53, duplicate members
// and deep nesting pass through verbatim.
func TestJSONLinesHostileAgent(t *testing.T) {
	hostile := "a\x00b\nc\r\x1b[2J\x7f\u0085\u009b\u2028\u2029\u202e\u200f\u061c\xff\xc0\"\\</script>"
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	huge := strings.Repeat("x", 1<<20)
	updates := []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + jsonString(hostile) + `}}`,
		"{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"raw \u2028\u2029\u0085\xff\u200f\"}}",
		`{"sessionUpdate":"x_unknown","n":12345678901234567890123,"f":1e400,"d":1,"d":2,"deep":` + deep + `,"s":"` + huge + `"}`,
	}
	var out bytes.Buffer
	r := render.NewJSON(&out, nil)
	var texts []string // as acpterm decoded them
	for _, u := range updates {
		raw := `{"sessionId":` + jsonString("s"+hostile) + `,"update":` + u + `}`
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if c, ok := n.Update.(*acp.AgentMessageChunk); ok {
			texts = append(texts, c.Content.(*acp.TextContent).Text)
		}
		r.SessionUpdate(&n, json.RawMessage(raw))
	}
	id := "t" + hostile
	r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: acp.SessionID("s" + hostile), TerminalID: acp.TerminalID(id),
		Info: &terminal.Info{Command: hostile, Args: []string{hostile}, Cwd: hostile}})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: acp.TerminalID(id), Data: []byte(hostile)})
	r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: acp.TerminalID(id), Status: &terminal.ExitStatus{Signal: &hostile}})
	r.Permission(render.PermissionEvent{SessionID: acp.SessionID(hostile), Title: hostile, Decision: "allow_once", TerminalCommand: hostile, Reason: hostile})
	r.Finish(acp.StopReason(hostile))
	r.Error(hostile, 1)
	evs := checkJSONLines(t, out.Bytes())
	for i, want := range texts {
		if got := evs[i]["update"].(map[string]any)["content"].(map[string]any)["text"]; got != want {
			t.Errorf("message text %q, want %q", got, want)
		}
	}
	want := strings.ToValidUTF8(hostile, "\uFFFD")
	if got := outputOf(evs, evs[3]["terminalId"].(string)); got != want {
		t.Errorf("terminal data %q, want %q", got, want)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"n":12345678901234567890123,"f":1e400,"d":1,"d":2,"deep":`+deep)) {
		t.Error("the unknown update is not written verbatim")
	}
	for _, ev := range evs[3:] {
		for k, v := range ev {
			if s, ok := v.(string); ok && k != "event" && k != "decision" && !strings.Contains(s, "\uFFFD") {
				t.Errorf("%s of %s: %q lost the invalid byte's U+FFFD", k, ev["event"], s)
			}
		}
	}
}

// jsonString is s encoded as a JSON string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestJSONTerminalsConcurrent: with many terminals whose events come
// from different goroutines (acpterm's pump and the display terminals of
// session updates), each line stays whole, and each terminal's events
// keep their order: terminal_created first, then its output, complete,
// then terminal_exit.
func TestJSONTerminalsConcurrent(t *testing.T) {
	const terms, chunks = 32, 50
	var out bytes.Buffer
	r := render.NewJSON(&out, nil)
	var wg sync.WaitGroup
	for i := range terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("term_", i)
			r.TerminalEvent(terminal.Event{Kind: terminal.EventCreated, SessionID: "s", TerminalID: acp.TerminalID(id), Info: &terminal.Info{Command: "c"}})
			for j := range chunks {
				// "€" cut in two across events, to exercise the carry.
				r.TerminalEvent(terminal.Event{Kind: terminal.EventOutput, TerminalID: acp.TerminalID(id), Data: []byte(fmt.Sprintf("\x82\xac%d\n\xe2", j))})
			}
			r.TerminalEvent(terminal.Event{Kind: terminal.EventExited, TerminalID: acp.TerminalID(id), Status: &terminal.ExitStatus{}})
			r.TerminalEvent(terminal.Event{Kind: terminal.EventReleased, TerminalID: acp.TerminalID(id)})
		}()
	}
	wg.Wait()
	evs := checkJSONLines(t, out.Bytes())
	state := map[string]int{} // 1 created, 2 exited
	for _, ev := range evs {
		id, _ := ev["terminalId"].(string)
		switch ev["event"] {
		case "terminal_created":
			if state[id] != 0 {
				t.Fatalf("%s created twice", id)
			}
			state[id] = 1
		case "terminal_output":
			if state[id] != 1 {
				t.Fatalf("output of %s outside created..exit", id)
			}
		case "terminal_exit":
			if state[id] != 1 {
				t.Fatalf("exit of %s outside created..exit", id)
			}
			state[id] = 2
		}
	}
	for i := range terms {
		id := fmt.Sprint("term_", i)
		var want strings.Builder
		want.WriteString("\uFFFD") // the first event starts mid-character
		for j := range chunks {
			fmt.Fprintf(&want, "%d\n€", j)
		}
		w := strings.TrimSuffix(want.String(), "€") + "\uFFFD" // the last is cut
		if got := outputOf(evs, id); got != w || state[id] != 2 {
			t.Errorf("%s: state %d, output %q, want %q", id, state[id], got, w)
		}
	}
}
