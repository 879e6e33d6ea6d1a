package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a fake clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func refs(items []Item) string {
	var b []string
	for _, it := range items {
		b = append(b, fmt.Sprintf("%d:%s:%s:%s", it.Ref, it.Kind.Name(), it.ID, it.State))
	}
	return strings.Join(b, " ")
}

func TestRunningListsInStartOrder(t *testing.T) {
	c := &clock{time.Unix(1000, 0)}
	tr := NewTracker(0, c.now)
	tr.Start(Item{Kind: ClientTerminal, ID: "term_1", Label: "sleep 1000"})
	tr.Start(Item{Kind: ToolCall, ID: "call_1", Label: "Run sleep", Terminals: []string{"term_1"}})
	tr.Start(Item{Kind: DisplayTerminal, ID: "call_2", Label: "npm run dev"})
	tr.Start(Item{Kind: ToolCall, ID: "call_2", Label: "Bash", Terminals: []string{"call_2"}})
	tr.Start(Item{Kind: ToolCall, ID: "call_3", Label: "Fetch docs"})
	// The tool calls that run a terminal listed are that terminal.
	items, more := tr.Running()
	if got, want := refs(items), "1:terminal:term_1:running 3:display_terminal:call_2:running 5:tool_call:call_3:running"; got != want || more != 0 {
		t.Fatalf("Running:\n got %s (+%d)\nwant %s", got, more, want)
	}
	if !items[0].Started.Equal(c.t) {
		t.Errorf("started %v, want the clock's %v", items[0].Started, c.t)
	}
	// An update of a running item keeps its Ref.
	if n := tr.Start(Item{Kind: DisplayTerminal, ID: "call_2", Label: "npm run dev -- --port 3000"}); n != 3 {
		t.Errorf("update got Ref %d, want 3", n)
	}
	// The terminal ends: its tool call, left open, is not listed on its
	// own; it is open (Find) until the agent ends it.
	tr.End(ClientTerminal, "term_1", "exit 0")
	items, _ = tr.Running()
	if it, ok := tr.Find("call_1"); !ok || it.State != Running {
		t.Errorf("Find(call_1) = %+v, %v", it, ok)
	}
	if got, want := refs(items), "3:display_terminal:call_2:running 5:tool_call:call_3:running"; got != want {
		t.Fatalf("after the end of term_1:\n got %s\nwant %s", got, want)
	}
	if items[0].Label != "npm run dev -- --port 3000" {
		t.Errorf("label %q, not updated", items[1].Label)
	}
	if !tr.Update(ToolCall, "call_3", "Fetch the docs", nil) || tr.Update(ToolCall, "call_9", "x", nil) {
		t.Errorf("Update found an unknown item, or not a known one")
	}
	if it, ok := tr.Find("5"); !ok || it.Label != "Fetch the docs" {
		t.Errorf("Find(5) = %+v, %v", it, ok)
	}
	if it, ok := tr.Find("1"); !ok || it.State != Ended || it.How != "exit 0" {
		t.Errorf("Find(1) after its end = %+v, %v", it, ok)
	}
	tr.EndAll(ToolCall, "cancelled")
	items, _ = tr.Running()
	if got, want := refs(items), "3:display_terminal:call_2:running"; got != want {
		t.Fatalf("after EndAll(ToolCall):\n got %s\nwant %s", got, want)
	}
}

func TestFind(t *testing.T) {
	tr := NewTracker(0, nil)
	tr.Start(Item{Kind: ToolCall, ID: "7", Label: "an agent's id that looks like a number"})
	tr.Start(Item{Kind: ClientTerminal, ID: "term_a"})
	tests := []struct {
		ref  string
		want int // Ref found, 0 for none
	}{
		{"1", 1}, {"#2", 2}, {"term_a", 2}, {"7", 0}, {"#", 0}, {"", 0}, {"+1", 0}, {"-1", 0}, {"0", 0},
		{"99999999999999999999", 0}, {"１", 0},
	}
	for _, tt := range tests {
		it, ok := tr.Find(tt.ref)
		if ok != (tt.want != 0) || it.Ref != tt.want {
			t.Errorf("Find(%q) = Ref %d, %v; want %d", tt.ref, it.Ref, ok, tt.want)
		}
	}
}

func TestStop(t *testing.T) {
	ctx := context.Background()
	tr := NewTracker(0, nil)
	var stopped []string
	tr.Start(Item{Kind: ClientTerminal, ID: "term_ok", Cancel: func(context.Context) error {
		stopped = append(stopped, "term_ok")
		tr.End(ClientTerminal, "term_ok", "killed by SIGTERM")
		return nil
	}})
	failing := errors.New("the runtime refused")
	tr.Start(Item{Kind: ClientTerminal, ID: "term_fail", Cancel: func(context.Context) error { return failing }})
	tr.Start(Item{Kind: DisplayTerminal, ID: "disp", NoCancel: "the agent runs it"})

	it, err := tr.Stop(ctx, "1")
	if err != nil || it.State != Ended || it.How != "killed by SIGTERM" || len(stopped) != 1 {
		t.Fatalf("Stop(1) = %+v, %v (stopped %v)", it, err, stopped)
	}
	if it, err := tr.Stop(ctx, "1"); !errors.Is(err, ErrEnded) || it.How != "killed by SIGTERM" || len(stopped) != 1 {
		t.Fatalf("Stop(1) again = %+v, %v; want ErrEnded and no second cancel", it, err)
	}
	if it, err := tr.Stop(ctx, "2"); !errors.Is(err, failing) || it.State != Running {
		t.Fatalf("Stop(2) = %+v, %v; want the cancel's error, and the item running again", it, err)
	}
	if it, err := tr.Stop(ctx, "3"); !errors.Is(err, ErrCannotStop) || it.NoCancel != "the agent runs it" {
		t.Fatalf("Stop(3) = %+v, %v; want ErrCannotStop with the reason", it, err)
	}
	for _, ref := range []string{"", "4", "nope"} {
		if _, err := tr.Stop(ctx, ref); !errors.Is(err, ErrUnknown) {
			t.Fatalf("Stop(%q): %v, want ErrUnknown", ref, err)
		}
	}
	if items, _ := tr.Running(); refs(items) != "2:terminal:term_fail:running 3:display_terminal:disp:running" {
		t.Fatalf("after the stops: %s", refs(items))
	}
}

// A stop under way is not started again, and an item whose stop was
// accepted (v2: a reply means accepted) stays Stopping until its end is
// heard.
func TestStopInProgress(t *testing.T) {
	ctx := context.Background()
	tr := NewTracker(0, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	tr.Start(Item{Kind: ToolCall, ID: "call_bg", Cancel: func(context.Context) error {
		close(entered)
		<-release
		return nil
	}})
	done := make(chan error, 1)
	go func() {
		_, err := tr.Stop(ctx, "call_bg")
		done <- err
	}()
	<-entered
	if it, err := tr.Stop(ctx, "1"); !errors.Is(err, ErrStopping) || it.State != Stopping {
		t.Fatalf("Stop during a stop = %+v, %v; want ErrStopping", it, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if it, _ := tr.Find("1"); it.State != Stopping {
		t.Fatalf("state %v after an accepted stop, want stopping until the end is heard", it.State)
	}
	tr.End(ToolCall, "call_bg", "cancelled")
	if it, _ := tr.Find("1"); it.State != Ended || it.How != "cancelled" {
		t.Fatalf("after its end: %+v", it)
	}
}

// WaitEnd returns once the item ends (not before: another item's end
// does not wake it for good), at once for one not running, and with the
// context's cause when that ends first.
func TestWaitEnd(t *testing.T) {
	tr := NewTracker(0, nil)
	tr.Start(Item{Kind: DisplayTerminal, ID: "dev"})
	tr.Start(Item{Kind: DisplayTerminal, ID: "other"})
	done := make(chan error, 1)
	go func() { done <- tr.WaitEnd(context.Background(), DisplayTerminal, "dev") }()
	tr.EndTerminal("other", "exit 0")
	select {
	case err := <-done:
		t.Fatalf("WaitEnd returned %v after another item's end", err)
	default:
	}
	tr.EndTerminal("dev", "killed by SIGTERM")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := tr.WaitEnd(context.Background(), ToolCall, "never"); err != nil {
		t.Fatalf("WaitEnd of an item not running: %v", err)
	}
	tr.Start(Item{Kind: ToolCall, ID: "stuck"})
	cause := errors.New("the agent did not confirm")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := tr.WaitEnd(ctx, ToolCall, "stuck"); !errors.Is(err, cause) {
		t.Fatalf("WaitEnd with an ended context: %v, want its cause", err)
	}
}

// An agent that announces 10,000 commands and ends none: the tracker
// keeps its bound and counts the rest; as they end, the count goes down.
func TestBounded(t *testing.T) {
	const max, n = 64, 10000
	tr := NewTracker(max, nil)
	huge := strings.Repeat("x", 1<<20)
	for i := range n {
		tr.Start(Item{Kind: DisplayTerminal, ID: fmt.Sprintf("t%d", i), Label: huge})
	}
	items, more := tr.Running()
	if len(items) != max || more != n-max {
		t.Fatalf("%d listed, %d more; want %d and %d", len(items), more, max, n-max)
	}
	for _, it := range items {
		if len(it.Label) > MaxLabel+len("…") {
			t.Fatalf("a label of %d bytes kept", len(it.Label))
		}
	}
	// IDs too long are counted, not kept, whatever room there is.
	tr2 := NewTracker(max, nil)
	if ref := tr2.Start(Item{Kind: ToolCall, ID: huge}); ref != 0 {
		t.Fatalf("an ID of 1 MiB was kept")
	}
	if _, more := tr2.Running(); more != 1 {
		t.Fatalf("more = %d, want 1", more)
	}
	// Ending them all: the kept ones move to the bounded list of ended
	// ones, the others come off the count.
	for i := range n {
		tr.EndTerminal(fmt.Sprintf("t%d", i), "exit 0")
	}
	items, more = tr.Running()
	if len(items) != 0 || more != 0 {
		t.Fatalf("%d listed, %d more after every end", len(items), more)
	}
	if len(tr.live) != 0 || len(tr.ended) > maxEnded {
		t.Fatalf("kept %d live, %d ended", len(tr.live), len(tr.ended))
	}
	// A tool call with many terminals keeps a few.
	var ids []string
	for i := range 1000 {
		ids = append(ids, fmt.Sprint(i))
	}
	tr.Start(Item{Kind: ToolCall, ID: "c", Terminals: ids})
	if it, _ := tr.Find("c"); len(it.Terminals) != maxTerminals {
		t.Fatalf("kept %d terminals of a tool call", len(it.Terminals))
	}
}
