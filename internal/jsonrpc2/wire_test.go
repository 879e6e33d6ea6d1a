package jsonrpc2

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests drive a Conn through its byte stream and compare whole reply lines, so the exact
// JSON the peer sees is pinned down.

const (
	after      = `{"jsonrpc":"2.0","id":"after","method":"echo","params":"ok"}` + "\n"
	afterReply = `{"jsonrpc":"2.0","id":"after","result":"ok"}`
)

func TestWireReplies(t *testing.T) {
	tests := []struct {
		name string
		max  int
		in   string
		want []string // replies, besides the follow-up call's
	}{
		{
			name: "truncated JSON",
			in:   `{"jsonrpc":` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input"}}`},
		},
		{
			name: "not JSON",
			in:   "hello\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'h' looking for beginning of value"}}`},
		},
		{
			name: "malformed array",
			in:   `[{"jsonrpc":"2.0"` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input"}}`},
		},
		{
			name: "batch",
			in:   `[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"echo"}]` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batches are not supported; none of the requests in this batch was processed, and none will be answered"}}`},
		},
		{
			name: "empty batch",
			in:   "[]\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batches are not supported; none of the requests in this batch was processed, and none will be answered"}}`},
		},
		{
			name: "not an object",
			in:   "42\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON object"}}`},
		},
		{
			name: "wrong version",
			in:   `{"jsonrpc":"1.0","id":5,"method":"echo"}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		},
		{
			name: "no version, string id",
			in:   `{"id":"abc","method":"echo"}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		},
		{
			name: "version of the wrong type",
			in:   `{"jsonrpc":2,"id":3,"method":"echo"}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		},
		{
			name: "method of the wrong type",
			in:   `{"jsonrpc":"2.0","id":4,"method":5}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request: \"method\" must be a string"}}`},
		},
		{
			name: "neither method nor result",
			in:   `{"jsonrpc":"2.0","id":6}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"invalid request: no \"method\", \"result\" or \"error\""}}`},
		},
		{
			name: "object id",
			in:   `{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"id\" must be a string, a number or null"}}`},
		},
		{
			name: "notification with a bad version is still answered",
			in:   `{"jsonrpc":"2","method":"note"}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		},
		{
			name: "blank lines",
			in:   "\n   \n\r\n\t\n",
		},
		{
			name: "responses are never answered",
			in: `{"jsonrpc":"2.0","id":99,"result":{}}` + "\n" +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}` + "\n" +
				`{"jsonrpc":"1.0","id":1,"result":1}` + "\n" +
				`{"jsonrpc":"2.0","id":"s","error":{"code":"bad"}}` + "\n",
		},
		{
			name: "cancelling an unknown call",
			in:   `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":12}}` + "\n",
		},
		{
			name: "CRLF",
			in:   `{"jsonrpc":"2.0","id":8,"method":"echo","params":[1]}` + "\r\n",
			want: []string{`{"jsonrpc":"2.0","id":8,"result":[1]}`},
		},
		{
			name: "ids echoed byte for byte",
			in: `{"jsonrpc":"2.0","id":"\u0041b","method":"echo","params":1}` + "\n" +
				`{"jsonrpc":"2.0","id":12345678901234567890,"method":"echo","params":2}` + "\n",
			want: []string{
				`{"jsonrpc":"2.0","id":"\u0041b","result":1}`,
				`{"jsonrpc":"2.0","id":12345678901234567890,"result":2}`,
			},
		},
		{
			name: "whitespace inside the line, compact reply",
			in:   ` { "jsonrpc" : "2.0" , "id" : 9 , "method" : "echo" , "params" : { "a" : [ 1 , 2 ] } } ` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":9,"result":{"a":[1,2]}}`},
		},
		{
			name: "null params",
			in:   `{"jsonrpc":"2.0","id":10,"method":"echo","params":null}` + "\n",
			want: []string{`{"jsonrpc":"2.0","id":10,"result":null}`},
		},
		{
			name: "line exactly at the limit, then one byte over",
			max:  100,
			in:   callOfLen(11, 100) + "\r\n" + callOfLen(12, 101) + "\n",
			want: []string{
				`{"jsonrpc":"2.0","id":11,"result":"` + strings.Repeat("x", 100-len(callOfLen(11, 0))) + `"}`,
				`{"jsonrpc":"2.0","id":12,"error":{"code":-32600,"message":"message exceeds the 100-byte limit"}}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newWirePeer(t, echo, &Options{MaxMessageSize: tt.max, Logf: t.Logf})
			p.send(tt.in)
			p.send(after)
			// Calls are answered concurrently, so replies are compared as a set.
			want := append(slices.Clone(tt.want), afterReply)
			var got []string
			for range want {
				got = append(got, p.recv())
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("replies:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
		})
	}
}

// callOfLen is an echo call of exactly n bytes (or its bare envelope when n is too small).
func callOfLen(id, n int) string {
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"echo","params":"`
	return head + strings.Repeat("x", max(0, n-len(head)-2)) + `"}`
}

// blocker's calls wait for their ctx to end and return its error; it reports each start.
func blocker(started chan<- string) Handler {
	return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		started <- req.ID.String()
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

func TestWireCancelRequest(t *testing.T) {
	started := make(chan string, 2)
	p := newWirePeer(t, blocker(started), nil)
	for _, id := range []string{`7`, `"seven"`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"block"}` + "\n")
		<-started
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}` + "\n")
		want := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32800,"message":"request cancelled"}}`
		if got := p.recv(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func TestWireDuplicateID(t *testing.T) {
	started := make(chan string, 2)
	p := newWirePeer(t, blocker(started), nil)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}` + "\n")
	<-started
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}` + "\n")
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"request id 1 is already in use"}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}` + "\n")
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"request cancelled"}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestWireNilHandler(t *testing.T) {
	p := newWirePeer(t, nil, nil)
	p.send(`{"jsonrpc":"2.0","method":"ignored"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"nope"}` + "\n")
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: nope"}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The last line may end at EOF without "\n". Replies to calls are dropped once input has ended,
// so this uses a line the reader answers itself, and a notification, which is still handled.
func TestWireFinalLineWithoutNewline(t *testing.T) {
	got := make(chan string, 1)
	p := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		got <- req.Method
		return nil, nil
	}), nil)
	p.send(`{"jsonrpc":"2.0","method":"first"}` + "\nnot json")
	p.in.Close()
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u')"}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if err := p.conn.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if m := <-got; m != "first" {
		t.Errorf("handled %q", m)
	}

	q := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		got <- req.Method
		return nil, nil
	}), nil)
	q.send(`{"jsonrpc":"2.0","method":"last"}`)
	q.in.Close()
	if err := q.conn.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if m := <-got; m != "last" {
		t.Errorf("handled %q, want the final notification", m)
	}
}
