package client

import (
	"encoding/json"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/terminal"
)

// endGate passes everything on to its Renderer until the run's end has
// been shown (close), and drops what the agent sends after that: the
// run's last lines are printed before the agent is shut down, and an
// update the agent sends while it shuts down (after it answered
// session/prompt, so of no turn) must not follow them, in text or after
// the final JSON event. Time and suspensions still pass.
type endGate struct {
	render.Renderer
	// mu is held for reading by every call passed on, and for writing by
	// close, so that no call that passed the check is still on its way
	// when the end is shown.
	mu     sync.RWMutex
	closed bool
}

// close shows the end (show, given the Renderer) and shuts the gate.
func (g *endGate) close(show func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		show()
		g.closed = true
	}
}

func (g *endGate) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.Renderer.SessionUpdate(n, raw)
	}
}

func (g *endGate) TerminalEvent(ev terminal.Event) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.Renderer.TerminalEvent(ev)
	}
}

func (g *endGate) Permission(p render.PermissionEvent) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.Renderer.Permission(p)
	}
}
