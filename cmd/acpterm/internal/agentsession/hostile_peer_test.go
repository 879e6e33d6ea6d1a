package agentsession

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// A client may send session/new as often as it likes: the registry keeps
// at most MaxSessions, evicting the least recently used idle one, and never
// one that runs a prompt.
func TestSessionFloodIsBounded(t *testing.T) {
	var r Registry
	busy, err := r.New("/busy")
	if err != nil {
		t.Fatal(err)
	}
	_, end, err := r.Begin(busy, "a prompt")
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	recent, err := r.New("/recent")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * MaxSessions {
		if _, err := r.New(fmt.Sprintf("/flood/%d", i)); err != nil {
			t.Fatalf("New #%d: %v", i, err)
		}
		if i%100 == 0 {
			// Used now and then: it stays among the recent ones.
			if _, e, err := r.Begin(recent, "a prompt"); err != nil {
				t.Fatalf("Begin on a recently used session after %d new ones: %v", i, err)
			} else {
				e()
			}
		}
	}
	r.mu.Lock()
	n := len(r.m)
	r.mu.Unlock()
	if n > MaxSessions {
		t.Errorf("%d sessions kept after a flood, want at most %d", n, MaxSessions)
	}
	if _, _, err := r.Begin(busy, "a prompt"); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("the busy session was evicted: Begin = %v", err)
	}
}

// When every session runs a prompt, nothing can be evicted: New refuses.
func TestSessionsAllBusyRefusesNew(t *testing.T) {
	var r Registry
	var ends []func()
	for range MaxSessions {
		id, err := r.New("/w")
		if err != nil {
			t.Fatal(err)
		}
		_, end, err := r.Begin(id, "a prompt")
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	if _, err := r.New("/w"); err == nil {
		t.Error("New with every session busy succeeded")
	}
	for _, end := range ends {
		end()
	}
	if _, err := r.New("/w"); err != nil {
		t.Errorf("New once the prompts ended: %v", err)
	}
}

// A cwd is kept as long as its session: one of any length is refused.
func TestHugeCwdRefused(t *testing.T) {
	var r Registry
	if _, err := r.New("/" + strings.Repeat("d", 1<<20)); !errors.Is(err, acp.ErrInvalidParams) {
		t.Errorf("New with a 1 MiB cwd: %v", err)
	}
	if _, err := r.New("/" + strings.Repeat("d", MaxCwdLen-1)); err != nil {
		t.Errorf("New with a cwd of MaxCwdLen bytes: %v", err)
	}
}
