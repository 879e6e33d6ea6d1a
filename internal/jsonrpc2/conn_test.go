package jsonrpc2

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

func TestLargeResult(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 50 MiB result")
	}
	const size = 50 << 20
	big := strings.Repeat("x", size)
	a, _ := connPair(t, memPipes, nil, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return big, nil
	}))
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

func TestEOFMidCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			aR, aW, bR, bW := tr.pipes(t)
			a := NewConn(aR, aW, nil, logOpts(t))
			defer a.Close()
			defer bR.Close()
			errc := make(chan error, 1)
			go func() { errc <- a.Call(context.Background(), "never-answered", nil, nil) }()
			// Read the request, so the call is surely pending, then end a's input.
			buf := make([]byte, 256)
			if _, err := bR.Read(buf); err != nil {
				t.Fatal(err)
			}
			bW.Close()
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Errorf("Call returned %v, want ErrClosed", err)
			}
			<-a.Done()
			if err := a.Wait(); err != nil {
				t.Errorf("Wait after EOF: %v, want nil", err)
			}
			if err := a.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Call after EOF: %v, want ErrClosed", err)
			}
		})
	}
}

func TestCloseJoinsEverything(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			started, cancelled := make(chan struct{}), make(chan struct{})
			a, b := connPair(t, tr.pipes, nil, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				close(started)
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			}))
			errc := make(chan error, 1)
			go func() { errc <- a.Call(context.Background(), "block", nil, nil) }()
			<-started

			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			select {
			case <-cancelled: // Close returned, so the handler has both seen its ctx end and returned
			default:
				t.Error("Close returned before the handler's ctx was cancelled")
			}
			if err := b.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := b.Wait(); err != nil {
				t.Errorf("Wait after Close: %v", err)
			}
			// b closed its ends, so a sees EOF and its pending call fails.
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Errorf("pending Call: %v, want ErrClosed", err)
			}
			if err := b.Notify(context.Background(), "x", nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Notify after Close: %v, want ErrClosed", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("a.Close: %v", err)
			}
		})
	}
}

func TestClosePendingCall(t *testing.T) {
	aR, aW, bR, bW := memPipes(t)
	a := NewConn(aR, aW, nil, logOpts(t))
	defer bR.Close()
	defer bW.Close()
	errc := make(chan error, 1)
	go func() { errc <- a.Call(context.Background(), "x", nil, nil) }()
	buf := make([]byte, 256)
	if _, err := bR.Read(buf); err != nil { // the call is pending once its request is out
		t.Fatal(err)
	}
	a.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("pending Call after Close: %v, want ErrClosed", err)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestWaitReturnsReadError(t *testing.T) {
	boom := errors.New("boom")
	c := NewConn(failingReader{boom}, io.Discard, nil, nil)
	if err := c.Wait(); err != boom {
		t.Errorf("Wait: %v, want %v", err, boom)
	}
	c.Close()
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteFailure(t *testing.T) {
	inR, inW := io.Pipe()
	logged := make(chan string, 10)
	c := NewConn(inR, failingWriter{}, nil, &Options{Logf: func(f string, args ...any) { logged <- fmt.Sprintf(f, args...) }})
	defer inW.Close()
	defer c.Close()
	err := c.Call(context.Background(), "x", nil, nil)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Call: %v, want ErrClosed wrapping io.ErrClosedPipe", err)
	}
	if got := <-logged; !strings.Contains(got, "write failed") {
		t.Errorf("logged %q, want a write failure", got)
	}
	// The failure is sticky: later calls fail at once instead of waiting for an answer.
	if err := c.Call(context.Background(), "y", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("second Call: %v, want ErrClosed", err)
	}
}

// Close closes a ReadWriteCloser used for both directions once.
type rwc struct {
	io.Reader
	io.Writer
	closes int
}

func (c *rwc) Close() error {
	c.closes++
	if c.closes > 1 {
		return errors.New("closed twice")
	}
	return nil
}

func TestCloseSharedReadWriter(t *testing.T) {
	c := &rwc{Reader: strings.NewReader(""), Writer: io.Discard}
	conn := NewConn(c, c, nil, nil)
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if c.closes != 1 {
		t.Errorf("closed %d times, want 1", c.closes)
	}
}

func TestID(t *testing.T) {
	tests := []struct {
		in      string
		ok      bool
		wantStr string
	}{
		{`1`, true, `1`},
		{`-9223372036854775808`, true, `-9223372036854775808`},
		{`"abc"`, true, `"abc"`},
		{` 7 `, true, `7`},
		{`null`, true, ``},
		{`1.5`, true, `1.5`},
		{`true`, false, ``},
		{`{}`, false, ``},
		{`[1]`, false, ``},
		{`"unterminated`, false, ``},
		{`1 2`, false, ``},
	}
	for _, tt := range tests {
		var id ID
		err := json.Unmarshal([]byte(tt.in), &id)
		if (err == nil) != tt.ok {
			t.Errorf("Unmarshal(%s): err=%v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if id.String() != tt.wantStr {
			t.Errorf("Unmarshal(%s).String() = %q, want %q", tt.in, id.String(), tt.wantStr)
		}
	}
	if got := Int64ID(42).String(); got != "42" {
		t.Errorf("Int64ID(42) = %s", got)
	}
	if got, _ := json.Marshal(StringID(`a"b`)); string(got) != `"a\"b"` {
		t.Errorf("StringID marshals to %s", got)
	}
	if got, _ := json.Marshal(ID{}); string(got) != "null" {
		t.Errorf("zero ID marshals to %s", got)
	}
	if (ID{}).IsValid() || !StringID("").IsValid() {
		t.Error("IsValid: the zero ID is absent, an empty string id is present")
	}
	if StringID("a").key() != (ID{raw: `"\u0061"`}).key() {
		t.Error(`"a" and "\u0061" must be the same request`)
	}
	if StringID("1").key() == Int64ID(1).key() {
		t.Error(`"1" and 1 must be different requests`)
	}
}

// A peer that writes garbage and never reads what we write back: our
// -32700 replies block the writer, and a Call whose ctx ends must still
// return, each bad line must reach OnBadMessage, and Close must unblock all.
func TestCancelWhileWritesBlock(t *testing.T) {
	inR, inW := io.Pipe()   // the peer writes here
	outR, outW := io.Pipe() // we write here; the peer reads one message, then nothing
	var bad atomic.Int32
	sawBad := make(chan struct{}, 16)
	c := NewConn(inR, outW, echo, &Options{OnBadMessage: func(string) {
		bad.Add(1)
		sawBad <- struct{}{}
	}})
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() { called <- c.Call(ctx, "slow", nil, nil) }()
	// Read our request, then stop reading.
	if _, err := bufio.NewReader(outR).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// Two garbage lines: the first reply blocks the reader in Write.
	go func() { inW.Write([]byte("garbage\nmore garbage\n")) }()
	<-sawBad
	cancel()
	if err := <-called; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	if bad.Load() < 1 {
		t.Fatal("OnBadMessage was not told")
	}
	c.Close() // closes outW, which fails the blocked writes
	inW.Close()
	outR.Close()
}

// A peer that reads nothing at all: the first Call's write blocks, and
// every Call and Notify must still return when its ctx ends. A request
// that was still queued is never sent; the one being written is followed
// by its $/cancel_request once the peer reads again.
func TestCallReturnsWhilePeerDoesNotRead(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &stuckWriter{w: outW, entered: make(chan struct{}), release: make(chan struct{})}
	c := NewConn(inR, w, echo, nil)
	queued := make(chan struct{})
	c.onQueued = func() { queued <- struct{}{} }
	defer func() {
		c.Close()
		inW.Close()
		outR.Close()
	}()
	start := func(f func(context.Context) error) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		<-queued
		return cancel, done
	}
	cancelFirst, firstDone := start(func(ctx context.Context) error { return c.Call(ctx, "first", nil, nil) })
	<-w.entered // the writer is stuck writing "first"
	cancelSecond, secondDone := start(func(ctx context.Context) error { return c.Call(ctx, "second", nil, nil) })
	cancelThird, thirdDone := start(func(ctx context.Context) error { return c.Notify(ctx, "third", nil) })
	for _, f := range []struct {
		name   string
		cancel context.CancelFunc
		done   chan error
	}{{"second Call", cancelSecond, secondDone}, {"Notify", cancelThird, thirdDone}, {"first Call", cancelFirst, firstDone}} {
		f.cancel()
		if err := <-f.done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s = %v, want context.Canceled", f.name, err)
		}
	}

	// The peer reads again: "first", its cancellation, then "after";
	// "second" and "third" never.
	close(w.release)
	c.onQueued = nil
	sent := make(chan error, 1)
	go func() { sent <- c.Notify(context.Background(), "after", nil) }()
	lines := bufio.NewReader(outR)
	var got []string
	for len(got) == 0 || got[len(got)-1] != "after" {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Method string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Method)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "$/cancel_request", "after"}; !slices.Equal(got, want) {
		t.Fatalf("the peer read %q, want %q", got, want)
	}
}

// stuckWriter blocks its first Write until release is closed, and says
// when that Write has begun.
type stuckWriter struct {
	w        io.Writer
	entered  chan struct{}
	release  chan struct{}
	enterOne sync.Once
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	s.enterOne.Do(func() { close(s.entered) })
	<-s.release
	return s.w.Write(p)
}

// The $/cancel_request of a call whose ctx ended reaches the peer before
// anything the caller sends afterwards.
func TestCancelPrecedesLaterMessages(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, echo, nil)
	defer func() {
		c.Close()
		inW.Close()
		outR.Close()
	}()
	lines := bufio.NewReader(outR)
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() { called <- c.Call(ctx, "slow", nil, nil) }()
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-called
	sent := make(chan error, 1)
	go func() { sent <- c.Notify(context.Background(), "after", nil) }()
	for _, want := range []string{`"method":"$/cancel_request"`, `"method":"after"`} {
		line, err := lines.ReadString('\n')
		if err != nil || !strings.Contains(line, want) {
			t.Fatalf("got %q (%v), want a line with %s", line, err, want)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// A response past the limit fails the call it answers, instead of leaving it
// waiting; a request past the limit is answered with its own id.
func TestTooLongResponseFailsItsCall(t *testing.T) {
	p := newWirePeer(t, echo, &Options{MaxMessageSize: 1 << 10, Logf: t.Logf})
	called := make(chan error, 1)
	go func() { called <- p.conn.Call(context.Background(), "big", nil, nil) }()
	req := p.recv()
	if !strings.Contains(req, `"id":1`) {
		t.Fatalf("request %s", req)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("z", 4<<10) + `"}` + "\n")
	err := <-called
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternalError || !strings.Contains(e.Message, "1024-byte message limit") {
		t.Fatalf("Call = %v, want an error naming the limit", err)
	}
	// The connection goes on.
	p.send(`{"jsonrpc":"2.0","id":"after","method":"echo","params":1}` + "\n")
	if got := p.recv(); got != `{"jsonrpc":"2.0","id":"after","result":1}` {
		t.Fatalf("after: %s", got)
	}
}

func TestPeekEnvelope(t *testing.T) {
	for _, tt := range []struct {
		head     string
		id       string
		response bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"output":"xxxx`, "7", true},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"x","params":"yyy`, `"a\"b"`, false},
		{`{"result":"xxxx`, "", true},
		{`{"error":{"code":1},"id":3}`, "3", true},
		{`{"jsonrpc":"2.0","method":"x","params":{"id":9,"k":"zzz`, "", false},
		{`[1,2`, "", false},
		{`garbage`, "", false},
	} {
		id, response := peekEnvelope([]byte(tt.head))
		if id.String() != tt.id && !(tt.id == "" && !id.IsValid()) || response != tt.response {
			t.Errorf("peekEnvelope(%s) = %s, %v; want %s, %v", tt.head, id, response, tt.id, tt.response)
		}
	}
}
