package jsonrpc2

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// writeAsync writes s to w in a goroutine and returns a channel closed once the write is done:
// over an io.Pipe, once the Conn's reader has taken it.
func writeAsync(w io.Writer, s string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.WriteString(w, s)
	}()
	return done
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A call is started only after the notifications that arrived before it have been handled.
func TestCallWaitsForEarlierNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan struct{})
		var handled atomic.Int32
		p := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			switch req.Method {
			case "note":
				<-release
				handled.Add(1)
				return nil, nil
			case "ask":
				close(started)
				return handled.Load(), nil
			}
			return nil, nil
		}), nil)
		p.send(`{"jsonrpc":"2.0","method":"note"}` + "\n")
		p.send(`{"jsonrpc":"2.0","method":"note"}` + "\n")
		p.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}` + "\n")
		synctest.Wait()
		if isClosed(started) {
			t.Fatal("the call started while the notifications before it were not handled")
		}
		close(release)
		if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"result":2}`; got != want {
			t.Errorf("reply: got %s, want %s", got, want)
		}
	})
}

// Calls still run concurrently with each other and with later notifications.
func TestCallsRunConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		both := make(chan struct{})
		var n atomic.Int32
		p := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			if n.Add(1) == 3 {
				close(both)
			}
			<-both // each waits for the other two
			return "ok", nil
		}), nil)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n")
		p.send(`{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n")
		p.send(`{"jsonrpc":"2.0","method":"note"}` + "\n")
		for range 2 {
			p.recv()
		}
	})
}

// At MaxConcurrentCalls the reader stops reading until a handler finishes.
func TestMaxConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var running atomic.Int32
		opts := logOpts(t)
		opts.MaxConcurrentCalls = 2
		p := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			running.Add(1)
			<-release
			return "ok", nil
		}), opts)
		var writes []<-chan struct{}
		for i := range 4 {
			writes = append(writes, writeAsync(p.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`+"\n", i)))
			synctest.Wait()
		}
		if got := running.Load(); got != 2 {
			t.Fatalf("%d handlers running, want 2 (MaxConcurrentCalls)", got)
		}
		// The third call was read and waits for a place; the fourth was not read.
		if !isClosed(writes[2]) || isClosed(writes[3]) {
			t.Fatalf("reader state: third line read %v, fourth line read %v; want true, false", isClosed(writes[2]), isClosed(writes[3]))
		}
		close(release)
		for range 4 {
			if _, code, err := replyShape(p.recv()); err != nil || code != 0 {
				t.Fatalf("reply: code %d, %v", code, err)
			}
		}
	})
}

// A handler waiting in a Call back to the peer does not hold its place: with one place, the
// peer can still make the call it needs answered before it answers ours.
func TestHandlerCallDoesNotHoldItsPlace(t *testing.T) {
	aR, aW, bR, bW := memPipes(t)
	var a, b *Conn
	a = NewConn(aR, aW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "prompt":
			var s string
			err := a.Call(ctx, "ask", nil, &s)
			return s, err
		case "other":
			return "fine", nil
		}
		return nil, nil
	}), &Options{MaxConcurrentCalls: 1, Logf: t.Logf})
	b = NewConn(bR, bW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var s string
		if err := b.Call(ctx, "other", nil, &s); err != nil {
			return nil, err
		}
		return "asked, " + s, nil
	}), logOpts(t))
	defer b.Close()
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var res string
	if err := b.Call(ctx, "prompt", nil, &res); err != nil {
		t.Fatalf("deadlock or failure: %v", err)
	}
	if res != "asked, fine" {
		t.Errorf("got %q", res)
	}
}

// Past MaxQueuedBytes of unwritten output the reader stops and senders wait; the queue holds
// at most the bound plus one message; once the peer reads, everything is answered.
func TestMaxQueuedBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max, size = 1000, 600
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := NewConn(inR, outW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			return strings.Repeat("x", size), nil
		}), &Options{MaxQueuedBytes: max, Logf: t.Logf})
		defer c.Close()

		var last <-chan struct{}
		sent := 0
		for sent < 10 {
			last = writeAsync(inW, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big"}`+"\n", sent))
			sent++
			synctest.Wait()
			if !isClosed(last) {
				break
			}
		}
		if isClosed(last) {
			t.Fatalf("read %d calls with nobody reading the replies; want the reader to stop", sent)
		}
		c.oqmu.Lock()
		queued := c.oqBytes
		c.oqmu.Unlock()
		if queued < max || queued > max+size+100 {
			t.Errorf("%d bytes queued, want between %d and the bound plus one message", queued, max)
		}
		// A sender waits for room instead of queueing more.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Notify(ctx, "more", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Notify with a full queue: %v, want it to wait until its ctx ends", err)
		}

		sc := bufio.NewScanner(outR)
		for i := range sent {
			if !sc.Scan() {
				t.Fatalf("reply %d: %v", i, sc.Err())
			}
			if _, code, err := replyShape(sc.Text()); err != nil || code != 0 {
				t.Fatalf("reply %d: code %d, %v", i, code, err)
			}
		}
		<-last
		inW.Close()
		go func() { // drain what the Conn writes while closing
			for sc.Scan() {
			}
		}()
		c.Close()
	})
}

// A peer that leaves our output unread for StallTimeout ends the connection with a clear error.
func TestStallTimeout(t *testing.T) {
	for _, stall := range []time.Duration{0, 5 * time.Second} {
		t.Run(fmt.Sprint(stall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inR, inW := io.Pipe()
				_, outW := io.Pipe() // never read
				c := NewConn(inR, outW, echo, &Options{StallTimeout: stall, Logf: t.Logf})
				defer c.Close()
				start := time.Now()
				err := c.Call(context.Background(), "echo", strings.Repeat("y", 100), nil)
				if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrPeerStalled) {
					t.Errorf("Call: %v, want ErrClosed and ErrPeerStalled", err)
				}
				want := stall
				if want == 0 {
					want = DefaultStallTimeout
				}
				if got := time.Since(start); got != want {
					t.Errorf("failed after %v, want %v", got, want)
				}
				err = c.Wait()
				if !errors.Is(err, ErrPeerStalled) {
					t.Fatalf("Wait: %v, want ErrPeerStalled", err)
				}
				msg := fmt.Sprintf("jsonrpc2: the peer stopped reading its input for %v with ", want)
				if !strings.HasPrefix(err.Error(), msg) || !strings.HasSuffix(err.Error(), " bytes queued") {
					t.Errorf("Wait: %q, want %q...", err, msg)
				}
				inW.Close()
			})
		})
	}
}

// A negative StallTimeout never fails the connection: a Call ends with its ctx.
func TestStallTimeoutNever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		_, outW := io.Pipe()
		c := NewConn(inR, outW, echo, &Options{StallTimeout: -1, Logf: t.Logf})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := c.Call(ctx, "echo", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Call: %v, want DeadlineExceeded", err)
		}
		inW.Close()
		c.Close()
		if err := c.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
}

// The notifications waiting to be handled count against MaxQueuedBytes: past it the reader
// stops, except while a notification handler waits in a Call (its response must be read).
func TestIncomingQueueBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		opts := logOpts(t)
		opts.MaxQueuedBytes = 1000
		p := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			<-release
			return nil, nil
		}), opts)
		note := `{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("n", 400) + `"}` + "\n"
		var last <-chan struct{}
		sent := 0
		for sent < 20 {
			last = writeAsync(p.in, note)
			sent++
			synctest.Wait()
			if !isClosed(last) {
				break
			}
		}
		if isClosed(last) || sent > 5 {
			t.Fatalf("read %d notifications of 400 bytes with a 1000-byte bound and a blocked handler", sent)
		}
		close(release)
		<-last
	})
}

// decodeMessage's params point into the line rather than copying it; dispatch copies them only
// when the line's buffer is to be reused.
func TestDecodeAliasesParams(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","method":"m","params":{"text":"abc"}}`)
	d := decodeMessage(line)
	if string(d.params) != `{"text":"abc"}` {
		t.Fatalf("params %s", d.params)
	}
	i := strings.Index(string(line), `{"text"`)
	if &d.params[0] != &line[i] {
		t.Error("params were copied out of the line")
	}
	d.own()
	if &d.params[0] == &line[i] {
		t.Error("own did not copy the params")
	}
	var v struct{ Text string }
	if err := json.Unmarshal(d.params, &v); err != nil || v.Text != "abc" {
		t.Errorf("params %s: %v", d.params, err)
	}
}
