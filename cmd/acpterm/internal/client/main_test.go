package client

import (
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Run tests re-execute the test binary as a fake agent (agent_test.go).
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	goleak.VerifyTestMain(m)
}

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ptr returns a pointer to v, for the optional fields of requests.
func ptr[T any](v T) *T { return &v }
