package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// cancelOnWait is a context cancelled by the first look at its Done
// channel, which NewSpawnerContext takes only once the helper runs and it
// waits for the helper to be ready: a cancellation mid-start, every time.
type cancelOnWait struct {
	context.Context
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWait) Done() <-chan struct{} {
	c.once.Do(c.cancel)
	return c.Context.Done()
}

// A start abandoned by its context kills the helper and removes the
// temporary root it made. Not parallel: it counts the test process's
// children.
func TestSpawnerContextCancelled(t *testing.T) {
	need(t, false)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cw := &cancelOnWait{Context: ctx, cancel: cancel}
	s, err := (&Policy{Mode: ReadOnly, TempDir: root}).NewSpawnerContext(cw)
	if !errors.Is(err, context.Canceled) || s != nil {
		t.Fatalf("NewSpawnerContext cancelled mid-start = %v, %v; want context.Canceled", s, err)
	}
	// The cgroup watchdog that an earlier test's cgroup started lives as
	// long as the test process: not left behind by this start.
	kids := slices.DeleteFunc(proctest.Children(os.Getpid()), func(pid int) bool { return slices.Contains(cgroup.Watchdogs(), pid) })
	if len(kids) > 0 {
		t.Fatalf("processes left behind: %v %s", kids, cmdlines(kids))
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := (&Policy{Mode: ReadOnly}).NewSpawnerContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("NewSpawnerContext with a done context: %v", err)
	}

	// Once started, the context no longer matters.
	ctx, cancel = context.WithCancel(context.Background())
	s, err = (&Policy{Mode: ReadOnly}).NewSpawnerContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel()
	c, out := spawn(t, s, &Cmd{Path: "/bin/echo", Args: []string{"echo", "still here"}})
	if got := <-out; got != "still here\n" {
		t.Fatalf("output %q after the context was cancelled", got)
	}
	if st, err := c.Wait(); err != nil || st != (ExitStatus{}) {
		t.Fatal(st, err)
	}
	c.Release()
}

// cmdlines says what each of pids runs, for a failure's message.
func cmdlines(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "\n%d: %q", pid, c)
	}
	return b.String()
}
