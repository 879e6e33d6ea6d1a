package remote

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

func TestOutputNotificationForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		form string // "text" or "data"
	}{
		{"ascii", "hello world\n", "text"},
		{"utf-8", "héllo wörld ✓\n", "text"},
		{"colours", "\x1b[31merror:\x1b[0m the build failed in three places\r\n", "text"},
		{"short colours", "\x1b[31mred\x1b[0m\r\n", "data"}, // each ESC is six bytes escaped
		{"quotes", `say "hi" \ bye`, "text"},
		{"empty", "", "text"},
		{"invalid utf-8", "hello\xff", "data"},
		{"zeros", strings.Repeat("\x00", 64), "data"},
		{"mostly control", "\x01\x02\x03abc", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &OutputNotification{SessionID: "s\"1", TerminalID: "t", Seq: 7, Offset: 1 << 40, Data: []byte(tc.data)}
			b, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(b, &members); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if _, ok := members[tc.form]; !ok || len(members) != 5 {
				t.Errorf("%s: want the %q form", b, tc.form)
			}
			var got OutputNotification
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Data, n.Data) || got.SessionID != n.SessionID || got.TerminalID != n.TerminalID || got.Seq != n.Seq || got.Offset != n.Offset {
				t.Errorf("round trip of %s: %+v", b, got)
			}
		})
	}
}

// The encoder's text is the shortest honest choice: never longer than
// base64 would be.
func TestOutputTextNeverLongerThanBase64(t *testing.T) {
	data := []byte(strings.Repeat("a\x01", 300))
	n := &OutputNotification{Data: data}
	b := n.appendJSON(nil)
	if !bytes.Contains(b, []byte(`"data":`)) {
		t.Errorf("text escaping %d bytes to %d was chosen over base64", len(data), len(b))
	}
}

func TestNextEscape(t *testing.T) {
	for i := 0; i < 40; i++ {
		for _, c := range []byte{0, 0x1f, '"', '\\'} {
			p := bytes.Repeat([]byte{'x'}, 40)
			p[i] = c
			// A byte above the hit must not hide it.
			if i+1 < len(p) {
				p[i+1] = 0
			}
			if got := nextEscape(p); got != i {
				t.Fatalf("byte %#x at %d: found at %d", c, i, got)
			}
		}
	}
	for _, c := range []byte{0x20, 0x7f, 0x80, 0xff, '!', '#', '[', ']'} {
		if got := nextEscape(bytes.Repeat([]byte{c}, 20)); got != 20 {
			t.Errorf("byte %#x: found an escape at %d", c, got)
		}
	}
}

// FuzzOutputNotification holds the decoder's fast path to encoding/json:
// whatever it accepts, encoding/json decodes to the same value; and what
// the encoder writes is valid JSON that decodes to what was encoded.
func FuzzOutputNotification(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","terminalId":"t","seq":1,"offset":0,"text":"hi\n"}`,
		`{"sessionId":"s","terminalId":"t","seq":1,"offset":0,"data":"aGkK"}`,
		` { "offset" : 3 , "text" : "\u001b[0m\"\\\/" , "seq":2 } `,
		`{"text":"a","data":"YQ=="}`,
		`{"seq":01}`, `{"seq":1.0}`, `{"seq":-1}`, `{"seq":18446744073709551616}`,
		`{"SessionID":"x"}`, `{"text":"\ud83d\ude00"}`, `{"text":"\xff"}`, `{"data":"a\nb"}`,
		`{"text":null}`, `{}`, `{"seq":1}x`, `{"data":"!!!!"}`,
	} {
		f.Add([]byte(s), []byte("payload"), "s")
	}
	f.Add([]byte(`{}`), []byte("\x00\x01\xff"), "s\xff\"")
	f.Fuzz(func(t *testing.T, wire, data []byte, id string) {
		var fast OutputNotification
		if decodeOutputFast(wire, &fast) {
			var w outputWire
			if err := json.Unmarshal(wire, &w); err != nil {
				t.Fatalf("fast path took %q, encoding/json refuses it: %v", wire, err)
			}
			want := w.Data
			if w.Text != nil {
				want = []byte(*w.Text)
			}
			if fast.SessionID != w.SessionID || fast.TerminalID != w.TerminalID || fast.Seq != w.Seq || fast.Offset != w.Offset || !bytes.Equal(fast.Data, want) {
				t.Fatalf("%q: fast %+v, encoding/json %+v", wire, fast, w)
			}
		}

		n := &OutputNotification{SessionID: "sess", TerminalID: "term", Seq: uint64(len(wire)), Offset: uint64(len(data)) << 20, Data: data}
		if utf8.ValidString(id) {
			n.TerminalID = acp.TerminalID(id)
		}
		enc := n.appendJSON(nil)
		if !json.Valid(enc) {
			t.Fatalf("encoded %q is not JSON", enc)
		}
		var got OutputNotification
		if !decodeOutputFast(enc, &got) {
			t.Fatalf("the fast path refuses the encoder's %q", enc)
		}
		if !bytes.Equal(got.Data, data) || got.SessionID != n.SessionID || got.TerminalID != n.TerminalID || got.Seq != n.Seq || got.Offset != n.Offset {
			t.Fatalf("round trip of %q: %+v", data, got)
		}
		// Any ID, as encoding/json would write it (invalid UTF-8 as U+FFFD).
		var mine, theirs string
		want, _ := json.Marshal(id)
		if err := json.Unmarshal(appendJSONString(nil, id), &mine); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		_ = json.Unmarshal(want, &theirs)
		if mine != theirs {
			t.Fatalf("id %q decodes as %q, encoding/json's as %q", id, mine, theirs)
		}
	})
}
