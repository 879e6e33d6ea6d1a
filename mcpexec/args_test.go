package mcpexec

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDecodeExec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want execArgs
		err  string
	}{
		{`{"cmd":"ls"}`, execArgs{Cmd: "ls", Yield: DefaultExecYield, MaxTokens: DefaultMaxOutputTokens}, ""},
		{`{"cmd":"ls","yield_time_ms":1,"max_output_tokens":99999999,"login":true,"shell":"/bin/bash","workdir":"sub","justification":"x"}`,
			execArgs{Cmd: "ls", Yield: MinYield, MaxTokens: MaxOutputTokens, Login: true, Shell: "/bin/bash", Workdir: "sub"}, ""},
		{`{"cmd":"ls","yield_time_ms":9223372036854775807}`, execArgs{Cmd: "ls", Yield: MaxYield, MaxTokens: DefaultMaxOutputTokens}, ""},
		{`{"cmd":"  "}`, execArgs{}, "cmd is required"},
		{`null`, execArgs{}, "cmd is required"},
		{`[]`, execArgs{}, "must be a JSON object"},
		{`{"cmd":["ls"]}`, execArgs{}, "cmd must be a string"},
		{`{"cmd":"ls","tty":"yes"}`, execArgs{}, "tty must be a boolean"},
		{`{"cmd":"ls","yield_time_ms":1.5}`, execArgs{}, "yield_time_ms must be an integer"},
		{`{"cmd":"ls","yield_time_ms":1e30}`, execArgs{}, "yield_time_ms must be an integer"},
		{`{"cmd":"ls","max_output_tokens":-3}`, execArgs{}, "must be positive"},
		{`{"cmd":"ls","workdir":"a\u0000b"}`, execArgs{}, "workdir contains a NUL"},
		{`{"cmd":`, execArgs{}, "bad arguments"},
	} {
		got, err := decodeExec(json.RawMessage(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("decodeExec(%s): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("decodeExec(%s): %v, want an error with %q", tc.in, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("decodeExec(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestDecodeWrite(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want writeArgs
		err  string
	}{
		{`{"session_id":3}`, writeArgs{SessionID: 3, Yield: DefaultWriteYield, MaxTokens: DefaultMaxOutputTokens}, ""},
		{`{"session_id":"12","chars":"y\n","yield_time_ms":1000}`, writeArgs{SessionID: 12, Chars: "y\n", Yield: time.Second, MaxTokens: DefaultMaxOutputTokens}, ""},
		{`{}`, writeArgs{}, "session_id is required"},
		{`{"session_id":-1}`, writeArgs{}, "session_id must be a session number"},
		{`{"session_id":99999999999}`, writeArgs{}, "session_id must be a session number"},
		{`{"session_id":1.5}`, writeArgs{}, "session_id must be a session number"},
		{`{"session_id":1,"chars":5}`, writeArgs{}, "chars must be a string"},
	} {
		got, err := decodeWrite(json.RawMessage(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("decodeWrite(%s): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("decodeWrite(%s): %v, want an error with %q", tc.in, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("decodeWrite(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// FuzzDecodeArgs: whatever the model sends, decoding returns arguments
// within their bounds or an error that names the tool, and never panics.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"cmd":"ls","yield_time_ms":5}`, `{"session_id":"7","chars":"\u00e9"}`, `{"cmd":null}`, `[1]`, `"x"`, `{"session_id":{}}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if a, err := decodeExec(raw); err == nil {
			if a.Cmd == "" || a.Yield < MinYield || a.Yield > MaxYield || a.MaxTokens < 1 || a.MaxTokens > MaxOutputTokens {
				t.Errorf("decodeExec(%q) = %+v out of bounds", raw, a)
			}
		} else if !strings.HasPrefix(err.Error(), "exec_command: ") {
			t.Errorf("decodeExec(%q): %v does not name the tool", raw, err)
		}
		if a, err := decodeWrite(raw); err == nil {
			if a.SessionID < 0 || a.Yield < MinYield || a.Yield > MaxYield || len(a.Chars) > maxArgBytes || a.MaxTokens < 1 {
				t.Errorf("decodeWrite(%q) = %+v out of bounds", raw, a)
			}
		} else if !strings.HasPrefix(err.Error(), "write_stdin: ") {
			t.Errorf("decodeWrite(%q): %v does not name the tool", raw, err)
		}
	})
}

// FuzzClip: the text is valid UTF-8, within the budget plus the line
// that says what was left out, and the whole output when it fits.
func FuzzClip(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), 8, 3)
	f.Add([]byte("h\xe2\x82\xacllo \xff wörld"), 5, 2)
	f.Fuzz(func(t *testing.T, data []byte, limit, chunks int) {
		limit = max(0, limit%4096)
		chunks = max(1, chunks%16)
		c := newClip(limit)
		step := max(1, len(data)/chunks)
		for p := data; len(p) > 0; {
			n := min(step, len(p))
			c.add(p[:n])
			p = p[n:]
		}
		got := c.text()
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if !c.truncated() {
			if want := strings.ToValidUTF8(string(data), "\uFFFD"); got != want {
				t.Fatalf("untruncated text %q, want %q", got, want)
			}
			return
		}
		head, rest, ok := strings.Cut(got, "tokens truncated…")
		if !ok {
			t.Fatalf("truncated without saying so: %q", got)
		}
		// Bytes kept from the output: at most the budget (U+FFFD aside).
		kept := strings.Count(head, "") + strings.Count(rest, "") // runes, ≤ bytes
		if kept > limit+200 {
			t.Fatalf("%d runes kept for a budget of %d bytes", kept, limit)
		}
		if !bytes.HasSuffix(data, []byte(strings.TrimPrefix(rest, "\n"))) && utf8.Valid(data) {
			t.Fatalf("tail %q is not the output's end", rest)
		}
	})
}

// FuzzToolCallHint: whatever a tools/call's _meta holds, the hint is
// either nothing or a short printable ID, and reading it never fails.
func FuzzToolCallHint(f *testing.F) {
	for _, s := range []string{`{"claudecode/toolUseId":"toolu_1"}`, `{"claudecode/toolUseId":7}`, `{"claudecode/toolUseId":"a\u001bb"}`, `{"callId":"call_1"}`, `{"callId":"x","claudecode/toolUseId":null}`, `null`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, meta string) {
		var m requestMeta
		if json.Unmarshal([]byte(meta), &m) != nil {
			return
		}
		id := toolCallHint(&m)
		if id == "" {
			return
		}
		if len(id) > MaxToolCallHint || strings.ContainsFunc(string(id), func(r rune) bool { return r <= ' ' || r > '~' }) {
			t.Fatalf("hint %q from %q", id, meta)
		}
	})
}
