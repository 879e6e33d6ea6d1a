package jsonrpc2

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

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

// An answer to a call of ours with neither result nor error (what a peer
// whose handler returned nothing may send) fails the call instead of
// leaving it waiting; the same object for an id we are not waiting on is
// an invalid request, answered as such.
func TestBareResponseFailsItsCall(t *testing.T) {
	for _, bare := range []string{`{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"error":null}`} {
		p := newWirePeer(t, echo, nil)
		called := make(chan error, 1)
		go func() { called <- p.conn.Call(context.Background(), "m", nil, nil) }()
		if req := p.recv(); !strings.Contains(req, `"id":1`) {
			t.Fatalf("request %s", req)
		}
		p.send(bare + "\n")
		err := <-called
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInternalError || !strings.Contains(e.Message, "neither a result nor an error") {
			t.Fatalf("%s: Call = %v, want an error saying so", bare, err)
		}
		p.send(`{"jsonrpc":"2.0","id":5}` + "\n")
		if got := p.recv(); !strings.Contains(got, `"id":5`) || !strings.Contains(got, `"code":-32600`) {
			t.Fatalf("an id not waited on: %s, want an invalid request answer", got)
		}
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
