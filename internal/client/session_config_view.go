package client

import (
	"encoding/json"
	"sync"

	"github.com/acpterm/acpterm/acp"
)

// sessionView sits in front of the run's renderer: it follows the
// session's mode and model through the agent's notifications and tells
// the renderer (sessionRenderer) when they change, once the turn has been
// announced with start. Everything else goes through untouched.
type sessionView struct {
	Renderer
	mu      sync.Mutex
	st      sessionState
	started bool
	shown   SessionInfo
}

func newSessionView(r Renderer) *sessionView { return &sessionView{Renderer: r} }

func (v *sessionView) setState(st *sessionState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st = *st
}

// snapshot is the state now. The slices are never changed in place (a
// change replaces them), so the copy may be read without the lock.
func (v *sessionView) snapshot() sessionState {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.st
}

func (v *sessionView) setMode(id acp.SessionModeID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.st.modes != nil {
		m := *v.st.modes
		m.CurrentModeID = id
		v.st.modes = &m
	}
	v.changed()
}

func (v *sessionView) setOptions(opts []acp.SessionConfigOption) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.options = opts
	v.changed()
}

// changed shows the new mode or model, if either changed since it was
// last shown (v.mu held). Before start nothing is shown: the setup's
// changes are summed up by start's one line.
func (v *sessionView) changed() {
	if !v.started {
		return
	}
	in := v.st.info()
	if in == v.shown {
		return
	}
	v.shown = in
	if sr, ok := v.Renderer.(sessionRenderer); ok {
		sr.ShowSession(in)
	}
}

// start shows the mode and model the turn starts with and starts the
// renderer's waiting clock; agent names the agent.
func (v *sessionView) start(agent string) {
	v.mu.Lock()
	v.started = true
	in := v.st.info()
	v.shown = in
	v.mu.Unlock()
	if sr, ok := v.Renderer.(sessionRenderer); ok {
		sr.ShowSession(in)
		sr.StartTurn(agent)
	}
}

// SessionUpdate follows current_mode_update and config_option_update,
// then passes every update on. The change is shown after the update: a
// renderer shows nothing for these two by themselves.
func (v *sessionView) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	v.Renderer.SessionUpdate(n, raw)
	switch u := n.Update.(type) {
	case *acp.CurrentModeUpdate:
		v.setMode(u.CurrentModeID)
	case *acp.ConfigOptionUpdate:
		v.setOptions(u.ConfigOptions)
	}
}
