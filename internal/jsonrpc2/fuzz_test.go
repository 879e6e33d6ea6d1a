package jsonrpc2

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

var fuzzSeeds = []string{
	"",
	"\n",
	`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}` + "\n",
	`{"jsonrpc":"2.0","id":"x","method":"block"}` + "\n" + `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"x"}}` + "\n",
	`{"jsonrpc":"2.0","method":"note","params":[1,2]}` + "\r\n",
	`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope","data":null}}` + "\n",
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"echo"}]` + "\n",
	"{\"jsonrpc\":\n",
	`{"jsonrpc":"1.0","id":3,"method":"echo"}` + "\n",
	`{"jsonrpc":"2.0","id":{},"method":"echo"}` + "\n",
	`{"jsonrpc":"2.0","id":4,"method":5}` + "\n",
	`{"jsonrpc":"2.0","id":5}` + "\n",
	`{"jsonrpc":"2.0","id":6,"method":"echo","params":"` + strings.Repeat("x", 100) + `"}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"echo"}`,
	"42\n\"s\"\nnull\n[]\n",
	`{"jsonrpc":"2.0","id":"\u00e9\ud800","method":"\u2028echo"}` + "\n",
}

// lockedBuffer collects a Conn's output; writes are serialized by the Conn, reads happen after Wait.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// FuzzFraming feeds arbitrary bytes as the incoming stream: the Conn must neither panic nor hang,
// and everything it writes back must be valid JSON-RPC responses, one per line.
func FuzzFraming(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Join(fuzzSeeds, "\n")))
	handler := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "block" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return req.Params, nil
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range []int{0, 64} {
			var out lockedBuffer
			c := NewConn(bytes.NewReader(data), &out, handler, &Options{MaxMessageSize: max})
			waited := make(chan error, 1)
			go func() { waited <- c.Wait() }()
			select {
			case err := <-waited:
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
			case <-time.After(timeout):
				t.Fatal("the Conn did not finish after the end of its input")
			}
			c.Close()

			written := out.b.String()
			if written != "" && !strings.HasSuffix(written, "\n") {
				t.Fatalf("output does not end with a newline: %q", written)
			}
			for _, line := range strings.Split(strings.TrimSuffix(written, "\n"), "\n") {
				if line == "" && written == "" {
					continue
				}
				if _, _, err := replyShape(line); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// FuzzDecodeMessage checks the envelope decoder: every input gets a consistent classification,
// and a message it accepts survives being encoded and decoded again unchanged.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(strings.TrimRight(s, "\r\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d := decodeMessage(line)
		var again any
		switch d.kind {
		case kindInvalid:
			if d.err == nil || (d.err.Code != CodeParseError && d.err.Code != CodeInvalidRequest) {
				t.Fatalf("invalid without a -32700/-32600 error: %+v", d)
			}
			if (d.err.Code == CodeParseError) == json.Valid(line) {
				t.Fatalf("parse error %v on valid JSON, or no parse error on invalid JSON", d.err)
			}
			buf, err := encode(wireError{JSONRPC: "2.0", ID: d.id, Error: d.err})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := replyShape(strings.TrimSuffix(buf.String(), "\n")); err != nil {
				t.Fatal(err)
			}
			return
		case kindIgnored:
			if d.note == "" {
				t.Fatal("ignored without a note")
			}
			return
		case kindCall, kindNotification:
			if d.method == "" || (d.kind == kindCall) != d.id.IsValid() {
				t.Fatalf("bad request classification: %+v", d)
			}
			if d.params != nil {
				again = wireRequest{JSONRPC: "2.0", ID: d.id, Method: d.method, Params: d.params}
			} else {
				again = wireRequest{JSONRPC: "2.0", ID: d.id, Method: d.method}
			}
		case kindResponse:
			if !d.id.IsValid() {
				t.Fatalf("response without an id: %+v", d)
			}
			if d.err != nil {
				again = wireError{JSONRPC: "2.0", ID: d.id, Error: d.err}
			} else {
				again = wireResult{JSONRPC: "2.0", ID: d.id, Result: d.result}
			}
		default:
			t.Fatalf("unknown kind %d", d.kind)
		}
		buf, err := encode(again)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", d, err)
		}
		d2 := decodeMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		if d2.kind != d.kind || d2.id != d.id || d2.method != d.method ||
			!sameJSON(d2.params, d.params) || !sameJSON(d2.result, d.result) || !sameError(d2.err, d.err) {
			t.Fatalf("round trip changed the message:\n in  %s\n out %s\n %+v\n %+v", line, buf, d, d2)
		}
	})
}

func sameJSON(a, b json.RawMessage) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes()) || bytes.Equal(a, b)
}

func sameError(a, b *Error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Code == b.Code && a.Message == b.Message && sameJSON(a.Data, b.Data)
}
