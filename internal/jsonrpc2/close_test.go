package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
)

// Close reports a write that failed before it was called: the messages
// behind that write never reached the peer. A clean connection closes with
// nil, and a second Close returns the first one's result.
func TestCloseReports(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w        io.Writer
		wantLost bool
	}{
		{"clean", io.Discard, false},
		{"write failed", failingWriter{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rw := io.Pipe()
			defer rw.Close()
			c := NewConn(r, tc.w, nil, logOpts(t))
			err := c.Notify(context.Background(), "note", nil)
			if gotFail := err != nil; gotFail != tc.wantLost {
				t.Fatalf("Notify: %v, want failure %v", err, tc.wantLost)
			}
			err = c.Close()
			if got := errors.Is(err, io.ErrClosedPipe); got != tc.wantLost {
				t.Fatalf("Close: %v; reports the failed write: %v, want %v", err, got, tc.wantLost)
			}
			if !tc.wantLost && err != nil {
				t.Fatalf("Close: %v, want nil", err)
			}
			if again := c.Close(); again != err {
				t.Fatalf("second Close: %v, want the first one's %v", again, err)
			}
		})
	}
}

// A write that fails because Close closed w is not reported: Close asked
// for it.
func TestCloseDoesNotReportItsOwnWriteFailure(t *testing.T) {
	r, rw := io.Pipe()
	defer rw.Close()
	pr, pw := io.Pipe() // nobody reads: the writer blocks in Write until Close closes pw
	defer pr.Close()
	c := NewConn(r, pw, nil, logOpts(t))
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan struct{})
	c.onQueued = func() { close(queued) }
	sent := make(chan error, 1)
	go func() { sent <- c.Notify(ctx, "note", nil) }()
	<-queued
	cancel()
	<-sent
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v, want nil", err)
	}
}

// TestCallsAfterWriteFailureAreNotRun: once a write has failed no answer can reach the peer,
// so the calls still read from it (a peer that pipelined calls and went) are not handled.
func TestCallsAfterWriteFailureAreNotRun(t *testing.T) {
	inR, inW := io.Pipe()
	var handled atomic.Int32
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		handled.Add(1)
		return "an answer nobody can read", nil
	})
	c := NewConn(inR, failingWriter{}, h, logOpts(t))
	defer c.Close()
	if err := c.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call: %v, want ErrClosed", err)
	}
	go func() {
		for i := range 50 {
			fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"work"}`+"\n", i)
		}
		inW.Close()
	}()
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("%d calls were handled after the write failed, want 0", n)
	}
}
