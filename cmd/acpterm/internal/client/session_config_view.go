package client

import (
	"encoding/json"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
)

// sessionView sits in front of the run's renderer: it follows the
// session's mode and model through the agent's notifications and tells
// the renderer (render.SessionRenderer) when they change, once the turn
// has been announced with start. Everything else goes through untouched.
type sessionView struct {
	render.Renderer
	mu       sync.Mutex
	st       sessionState
	started  bool
	shown    render.SessionInfo
	commands []acp.AvailableCommand // the agent's slash commands, as last sent
}

func newSessionView(r render.Renderer) *sessionView { return &sessionView{Renderer: r} }

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

func (v *sessionView) setModels(models *acp.SessionModelState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.models = models
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
	if sr, ok := v.Renderer.(render.SessionRenderer); ok {
		sr.ShowSession(in)
	}
}

// start shows the mode and model the turn starts with (for a later turn
// of an interactive session, only when they changed since they were last
// shown) and starts the renderer's waiting clock; agent names the agent.
func (v *sessionView) start(agent string) {
	v.mu.Lock()
	in := v.st.info()
	show := !v.started || in != v.shown
	v.started = true
	v.shown = in
	v.mu.Unlock()
	if sr, ok := v.Renderer.(render.SessionRenderer); ok {
		if show {
			sr.ShowSession(in)
		}
		sr.StartTurn(agent)
	}
}

// availableCommands is the agent's slash commands, as last sent in an
// available_commands_update.
func (v *sessionView) availableCommands() []acp.AvailableCommand {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.commands
}

// SessionUpdate follows current_mode_update, config_option_update and
// available_commands_update, then passes every update on. A change of mode
// or model is shown after the update: a renderer shows nothing for those
// two by themselves.
func (v *sessionView) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	v.Renderer.SessionUpdate(n, raw)
	switch u := n.Update.(type) {
	case *acp.CurrentModeUpdate:
		v.setMode(u.CurrentModeID)
	case *acp.ConfigOptionUpdate:
		v.setOptions(u.ConfigOptions)
	case *acp.AvailableCommandsUpdate:
		v.mu.Lock()
		v.commands = u.AvailableCommands
		v.mu.Unlock()
	}
}
