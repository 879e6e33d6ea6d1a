package jsonrpc2

import (
	"context"
	"strings"
	"testing"
)

// NotifyAppend writes the params as they were appended, in the same
// envelope as Notify, in order with other sends, and a peer's Conn reads
// them as any notification.
func TestNotifyAppend(t *testing.T) {
	p := newWirePeer(t, nil, nil)
	ctx := context.Background()
	big := strings.Repeat("x", 300<<10) // larger than the pooled buffers' first size
	if err := p.conn.NotifyAppend(ctx, `a/"b"`, func(b []byte) []byte { return append(b, `{"k" : [1, 2]}`...) }, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.conn.Notify(ctx, "n", map[string]int{"k": 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.conn.NotifyAppend(ctx, "big", func(b []byte) []byte { return append(append(append(b, '"'), big...), '"') }, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"jsonrpc":"2.0","method":"a/\"b\"","params":{"k" : [1, 2]}}`,
		`{"jsonrpc":"2.0","method":"n","params":{"k":1}}`,
		`{"jsonrpc":"2.0","method":"big","params":"` + big + `"}`,
	} {
		if got := p.recv(); got != want {
			t.Errorf("got %.100q…, want %.100q…", got, want)
		}
	}

	got := make(chan *Request, 1)
	a, _ := connPair(t, osPipes, nil, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		got <- req
		return nil, nil
	}))
	if err := a.NotifyAppend(ctx, "m", func(b []byte) []byte { return append(b, `[true]`...) }, nil); err != nil {
		t.Fatal(err)
	}
	if req := <-got; req.Method != "m" || string(req.Params) != `[true]` || req.IsCall() {
		t.Errorf("the peer read %q %s", req.Method, req.Params)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.NotifyAppend(cancelled, "m", func(b []byte) []byte { return append(b, `1`...) }, nil); err != context.Canceled {
		t.Errorf("with a cancelled ctx: %v", err)
	}
}
