package jsonrpc2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			notes := make(chan string, 2)
			handler := func(side string) Handler {
				return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
					if !req.IsCall() {
						notes <- side + " got " + req.Method + " " + string(req.Params)
						return nil, nil
					}
					var p struct{ N int }
					if err := json.Unmarshal(req.Params, &p); err != nil {
						return nil, err
					}
					return map[string]any{"side": side, "double": 2 * p.N}, nil
				})
			}
			a, b := connPair(t, tr.pipes, handler("a"), handler("b"))
			ctx := context.Background()

			var got struct {
				Side   string
				Double int
			}
			if err := a.Call(ctx, "double", map[string]int{"n": 21}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Side != "b" || got.Double != 42 {
				t.Errorf("a->b: got %+v, want {b 42}", got)
			}
			if err := b.Call(ctx, "double", map[string]int{"n": 5}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Side != "a" || got.Double != 10 {
				t.Errorf("b->a: got %+v, want {a 10}", got)
			}
			if err := a.Call(ctx, "double", map[string]int{"n": 1}, nil); err != nil {
				t.Errorf("Call with a nil result: %v", err)
			}

			if err := a.Notify(ctx, "hello", []int{1}); err != nil {
				t.Fatal(err)
			}
			if got, want := <-notes, "b got hello [1]"; got != want {
				t.Errorf("notification a->b: got %q, want %q", got, want)
			}
			if err := b.Notify(ctx, "hello", nil); err != nil {
				t.Fatal(err)
			}
			if got, want := <-notes, "a got hello "; got != want {
				t.Errorf("notification b->a: got %q, want %q", got, want)
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	a, b := connPair(t, memPipes, echo, echo)
	const goroutines, calls = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	for g := range goroutines {
		for _, c := range []*Conn{a, b} {
			wg.Go(func() {
				for i := range calls {
					want := fmt.Sprintf("g%d-i%d", g, i)
					var got string
					if err := c.Call(context.Background(), "echo", want, &got); err != nil {
						errs <- err
						return
					}
					if got != want {
						errs <- fmt.Errorf("got %q, want %q", got, want)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// gateReader signals routed at the first Read after the one that carried a response: by then the
// reader goroutine has routed every line it had, that response included.
type gateReader struct {
	r      io.ReadCloser
	seen   bool
	routed chan struct{}
}

func (g *gateReader) Read(p []byte) (int, error) {
	if g.seen && g.routed != nil {
		close(g.routed)
		g.routed = nil
	}
	n, err := g.r.Read(p)
	if strings.Contains(string(p[:n]), `"result"`) {
		g.seen = true
	}
	return n, err
}

func (g *gateReader) Close() error { return g.r.Close() }

// The peer sends 100 notifications and then the response; the caller must see all 100 handled
// first, even though the response is read while the first notification is still being handled.
func TestResponseWaitsForEarlierNotifications(t *testing.T) {
	const notes = 100
	aR, aW, bR, bW := memPipes(t)
	routed := make(chan struct{})
	var (
		mu   sync.Mutex
		seen []int
	)
	a := NewConn(&gateReader{r: aR, routed: routed}, aW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var i int
		if err := json.Unmarshal(req.Params, &i); err != nil {
			return nil, err
		}
		if i == 0 {
			<-routed // hold the queue until the response has been routed
		}
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
		return nil, nil
	}), logOpts(t))
	var b *Conn
	b = NewConn(bR, bW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		for i := range notes {
			if err := b.Notify(ctx, "note", i); err != nil {
				return nil, err
			}
		}
		return "done", nil
	}), logOpts(t))
	defer b.Close()
	defer a.Close()

	var res string
	if err := a.Call(context.Background(), "work", nil, &res); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != notes {
		t.Fatalf("Call returned after %d of %d notifications were handled", len(seen), notes)
	}
	for i, n := range seen {
		if n != i {
			t.Fatalf("notification %d handled at position %d: not in arrival order", n, i)
		}
	}
}

// A notification handler may call the peer with its own ctx: that response cannot wait for
// the handler that waits for it.
func TestCallFromNotificationHandler(t *testing.T) {
	result := make(chan string, 1)
	var a *Conn
	a, b := connPair(t, memPipes, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var s string
		err := a.Call(ctx, "echo", "from a notification handler", &s)
		if err != nil {
			s = err.Error()
		}
		result <- s
		return nil, nil
	}), echo)
	if err := b.Notify(context.Background(), "poke", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := <-result, "from a notification handler"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCancelOutgoingCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			aR, aW, bR, bW := tr.pipes(t)
			tap := &tapWriter{w: bW, lines: make(chan string, 10)}
			started, handlerSawCancel := make(chan struct{}), make(chan error, 1)
			a := NewConn(aR, aW, nil, logOpts(t))
			b := NewConn(bR, tap, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				close(started)
				<-ctx.Done()
				handlerSawCancel <- ctx.Err()
				return nil, ctx.Err()
			}), logOpts(t))
			defer b.Close()
			defer a.Close()

			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- a.Call(ctx, "block", nil, nil) }()
			<-started
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("Call returned %v, want context.Canceled", err)
			}
			if err := <-handlerSawCancel; !errors.Is(err, context.Canceled) {
				t.Errorf("the peer's handler ctx ended with %v, want context.Canceled", err)
			}
			const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"request cancelled"}}` + "\n"
			if got := <-tap.lines; got != want {
				t.Errorf("peer replied %q, want %q", got, want)
			}
			// The late reply was dropped; the connection still works.
			if err := b.Call(context.Background(), "x", nil, nil); errorCode(err) != CodeMethodNotFound {
				t.Errorf("call after the cancellation: got %v, want -32601", err)
			}
		})
	}
}

func errorCode(err error) int64 {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return 0
}

func TestCallWithDoneContextSendsNothing(t *testing.T) {
	p := newWirePeer(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.conn.Call(ctx, "x", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := p.conn.Notify(context.Background(), "marker", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := p.recv(), `{"jsonrpc":"2.0","method":"marker"}`; got != want {
		t.Errorf("first message written: got %s, want %s", got, want)
	}
}

func TestErrorMapping(t *testing.T) {
	errCustom := &Error{Code: -32002, Message: "resource not found", Data: json.RawMessage(`{"uri":"file:///x"}`)}
	handler := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "wrapped":
			return nil, fmt.Errorf("looking: %w", errCustom)
		case "plain":
			return nil, errors.New("disk on fire")
		case "canceled":
			return nil, context.Canceled // not cancelled by the peer: an internal error
		case "badresult":
			return func() {}, nil
		}
		return nil, nil
	})
	tests := []struct {
		method string
		opts   *Options
		want   *Error
	}{
		{"wrapped", nil, errCustom},
		{"plain", nil, &Error{Code: CodeInternalError, Message: "disk on fire"}},
		{"canceled", nil, &Error{Code: CodeInternalError, Message: "context canceled"}},
		{"badresult", nil, &Error{Code: CodeInternalError, Message: "encoding the result: json: unsupported type: func()"}},
		{"plain", &Options{ToWireError: func(err error) *Error {
			return &Error{Code: -32099, Message: "mapped: " + err.Error()}
		}}, &Error{Code: -32099, Message: "mapped: disk on fire"}},
		{"wrapped", &Options{ToWireError: func(error) *Error { return nil }}, errCustom},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			aR, aW, bR, bW := memPipes(t)
			opts := tt.opts
			if opts == nil {
				opts = &Options{}
			}
			opts.Logf = t.Logf
			a := NewConn(aR, aW, nil, logOpts(t))
			b := NewConn(bR, bW, handler, opts)
			defer b.Close()
			defer a.Close()
			err := a.Call(context.Background(), tt.method, nil, nil)
			got, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("got %v, want *Error", err)
			}
			if got.Code != tt.want.Code || got.Message != tt.want.Message || string(got.Data) != string(tt.want.Data) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNilResultIsNull(t *testing.T) {
	p := newWirePeer(t, HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil }), nil)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"x"}` + "\n")
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"result":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestLargeResult: a result larger than the queue bound and many write chunks long gets
// through whole. The limits are scaled down from the defaults (64 MiB messages, 32 MiB
// queued) so that the race detector, slow on copies this size, does not make it a long test;
// the relation between them is the same.
func TestLargeResult(t *testing.T) {
	const size = 12 << 20
	opts := &Options{MaxMessageSize: 16 << 20, MaxQueuedBytes: 4 << 20, Logf: t.Logf}
	big := strings.Repeat("x", size)
	aR, aW, bR, bW := memPipes(t)
	a := NewConn(aR, aW, nil, opts)
	b := NewConn(bR, bW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return big, nil
	}), opts)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	var got string
	if err := a.Call(context.Background(), "big", nil, &got); err != nil {
		t.Fatal(err)
	}
	if got != big {
		t.Errorf("got %d bytes back, want the %d sent", len(got), size)
	}
}

// A line past the limit is skipped without being gathered: memory allocated while it streams
// through stays far below its size.
func TestTooLongLineBoundedMemory(t *testing.T) {
	const max, lineSize = 1 << 10, 16 << 20
	p := newWirePeer(t, echo, &Options{MaxMessageSize: max, Logf: t.Logf})
	chunk := []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("y", 64<<10))
	p.send(`{"jsonrpc":"2.0","id":0,"method":"warm"}` + "\n")
	p.recv()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for sent := 0; sent < lineSize; sent += len(chunk) {
		if _, err := p.in.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	p.send("\n")
	got := p.recv()
	runtime.ReadMemStats(&after)

	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"message exceeds the 1024-byte limit"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("allocated %d bytes while skipping a %d-byte line; the line was buffered", alloc, lineSize)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"x","params":"still here"}` + "\n")
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":2,"result":"still here"}`; got != want {
		t.Errorf("after the long line: got %s, want %s", got, want)
	}
}
