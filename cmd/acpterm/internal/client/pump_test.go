package client

import (
	"context"
	"testing"
)

// TestShownGate: terminal/create's wait ends when the terminal was shown,
// before or after the wait began, when the pump ends, or with ctx.
func TestShownGate(t *testing.T) {
	g := newShownGate()
	g.mark("s", "t1")
	g.wait(context.Background(), "s", "t1") // shown before: at once

	waited := make(chan struct{})
	go func() {
		g.wait(context.Background(), "s", "t2")
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("wait for t2 returned before t2 was shown")
	default:
	}
	g.mark("s", "t2")
	<-waited

	g.forget("s", "t1")
	g.forget("s", "t2")
	if len(g.shown) != 0 {
		t.Errorf("%d terminals kept after forget", len(g.shown))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.wait(ctx, "s", "t3") // ctx ended
	g.stop()
	g.wait(context.Background(), "s", "t4") // the pump ended
}
