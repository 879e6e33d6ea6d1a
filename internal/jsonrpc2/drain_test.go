package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A peer that writes its calls and closes its end gets every answer: the calls still queued
// behind MaxConcurrentCalls and behind a notification are started after the end of input,
// with a live ctx, and Done waits for the last reply. A handler may still notify, and its
// Calls fail at once, since no response can come.
func TestDrainAnswersCallsReadBeforeEOF(t *testing.T) {
	const calls = 6
	release := make(chan struct{})
	noted := make(chan error, 1)
	// The last call's handler notifies and calls once the end of input,
	// read right after it, has been seen: the Call must then fail, however
	// the reader and the handlers were scheduled.
	ended := make(chan struct{})
	var p *wirePeer
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "slow-note":
			<-release // calls arriving behind it are queued
			return nil, nil
		case "note-and-call":
			<-ended
			noted <- errors.Join(
				p.conn.Notify(ctx, "progress", nil),
				p.conn.Call(ctx, "back", nil, nil),
			)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("ctx already done: %w", err)
		}
		return req.Seq, nil
	})
	p = newWirePeer(t, h, &Options{Logf: t.Logf, MaxConcurrentCalls: 2, DrainTimeout: time.Minute, inputEnded: func() { close(ended) }})
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","method":"slow-note"}` + "\n")
	for i := 1; i <= calls; i++ {
		method := "work"
		if i == calls {
			method = "note-and-call"
		}
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":%q}`+"\n", i, method)
	}
	p.send(in.String())
	p.in.Close()
	close(release)

	var got []string
	for range calls + 1 { // the answers, and the handler's notification
		got = append(got, p.recv())
	}
	select {
	case <-p.conn.Done():
	case <-time.After(timeout):
		t.Fatal("Done not closed after the last answer")
	}
	if err := p.conn.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	var want []string
	for i := 1; i <= calls; i++ {
		want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, i+1))
	}
	want = append(want, `{"jsonrpc":"2.0","method":"progress"}`)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("answers after the end of input:\n got %q\nwant %q", got, want)
	}
	err := <-noted
	if !errors.Is(err, ErrClosed) || strings.Contains(err.Error(), "progress") {
		t.Errorf("a draining handler's Notify and Call: %v, want only the Call to fail with ErrClosed", err)
	}
}

// Past DrainTimeout the handlers still running get a cancelled ctx and no answer is sent:
// a handler that waits for its ctx cannot hold the connection open.
func TestDrainTimeout(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	q := newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return "late", nil
	}), &Options{Logf: t.Logf, DrainTimeout: 50 * time.Millisecond})
	q.send(`{"jsonrpc":"2.0","id":1,"method":"forever"}` + "\n")
	<-started
	q.in.Close()
	select {
	case <-q.conn.Done():
	case <-time.After(timeout):
		t.Fatal("Done not closed after DrainTimeout")
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("handler ctx: %v, want cancelled", err)
	}
	q.conn.Close()
	for l := range q.lines {
		t.Errorf("answered after the drain timed out: %s", l)
	}
}

// A write that fails ends the drain at once: nobody can be answered.
func TestDrainEndsOnWriteFailure(t *testing.T) {
	inR, inW := io.Pipe()
	started := make(chan struct{})
	c := NewConn(inR, failingWriter{}, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "forever" {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return "ok", nil
	}), &Options{DrainTimeout: time.Hour})
	defer c.Close()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"forever"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	// Its reply is the write that fails.
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"quick"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	select {
	case <-c.Done():
	case <-time.After(timeout):
		t.Fatal("the drain went on after a failed write")
	}
}

// Done closes only once the drain's replies are written, not when they are queued: a host
// that closes the connection at Done (acp.ServeAgent does) would otherwise drop the replies
// queued behind one the peer was slow to read, and a peer that piped in its requests would
// get only that one answer.
func TestDrainDoneAfterRepliesWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		w := &heldWriter{gate: make(chan struct{})}
		c := NewConn(inR, w, echo, &Options{Logf: t.Logf, DrainTimeout: time.Minute})
		const calls = 3
		for i := 1; i <= calls; i++ {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":%d}`+"\n", i, i); err != nil {
				t.Fatal(err)
			}
		}
		inW.Close()
		// Every call is answered: the first reply is in a Write the peer has not finished
		// reading, the others are queued behind it.
		synctest.Wait()
		// The peer reads that one; the next Write waits.
		w.gate <- struct{}{}
		synctest.Wait()
		if isClosed(c.Done()) {
			t.Error("Done closed while replies were still to be written")
		}
		close(w.gate)
		<-c.Done()
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		var got []string
		for l := range strings.Lines(w.String()) {
			got = append(got, strings.TrimSuffix(l, "\n"))
		}
		var want []string
		for i := 1; i <= calls; i++ {
			want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, i))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("written by the time Close returned:\n got %q\nwant %q", got, want)
		}
	})
}

// heldWriter lets each Write through when it takes a token from gate (or gate is closed),
// as a peer slow to read does, and keeps what was written.
type heldWriter struct {
	gate chan struct{}
	mu   sync.Mutex
	b    strings.Builder
}

func (w *heldWriter) Write(p []byte) (int, error) {
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *heldWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
