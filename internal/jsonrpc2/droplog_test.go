package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A response to a call its caller gave up on is the normal end of a cancellation and is dropped
// silently; a response to an id the connection never issued is the peer's fault and is logged.
func TestDroppedResponseLog(t *testing.T) {
	logs := make(chan string, 10)
	p := newWirePeer(t, nil, &Options{Logf: func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Log(msg)
		logs <- msg
	}})

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.conn.Call(ctx, "block", nil, nil) }()
	if got := p.recv(); !strings.Contains(got, `"id":1`) {
		t.Fatalf("first message %q, want call 1", got)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call returned %v, want context.Canceled", err)
	}
	if got := p.recv(); !strings.Contains(got, "$/cancel_request") {
		t.Fatalf("after cancelling: %q, want $/cancel_request", got)
	}

	p.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"request cancelled"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":99,"result":null}` + "\n")
	// Responses are handled in order, so the line about 99 comes after whatever 1 caused.
	got := <-logs
	if !strings.Contains(got, "call 99") {
		t.Errorf("first log line %q, want one about call 99 only", got)
	}
}
