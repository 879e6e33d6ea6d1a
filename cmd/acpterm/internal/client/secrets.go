package client

import (
	"slices"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/sandbox"
)

// hiddenCount is how many paths the sandboxes hide, each counted once.
func hiddenCount(boxes []*sandbox.Applied) int {
	var seen []string
	for _, a := range boxes {
		for _, h := range append(slices.Clone(a.Hidden), a.Redacted...) {
			if !slices.Contains(seen, h) {
				seen = append(seen, h)
			}
		}
	}
	return len(seen)
}

// jsonSandbox is the event that says, with --format json, what the run's
// sandboxes hide: a read that fails on one of these paths, or below one,
// failed because of the sandbox (nothing at the syscall level tells).
type jsonSandbox struct {
	Event string `json:"event"` // "sandbox"
	// Commands and Agent are the sandboxes of the commands run for
	// terminal/create and of the agent itself (absent when it is not
	// confined here).
	Commands *jsonHidden `json:"commands,omitempty"`
	Agent    *jsonHidden `json:"agent,omitempty"`
	// AgentKeys are the confined agent's API keys set in the environment
	// (or its login file), each masked or not, and why not (KeyMask).
	AgentKeys []agentstart.KeyStatus `json:"agentKeys,omitempty"`
}

// jsonHidden is what one sandbox hides (sandbox.Applied's Hidden, Shown
// and Redacted).
type jsonHidden struct {
	Hidden   []string `json:"hidden"`
	Shown    []string `json:"shown"`
	Redacted []string `json:"redacted"`
	Missing  []string `json:"missing,omitempty"`
	// By is "landlock" when Landlock hides them, without a mount
	// namespace: their names can be listed, not read.
	By string `json:"by,omitempty"`
}

func hiddenOf(a *sandbox.Applied) *jsonHidden {
	if a == nil {
		return nil
	}
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	h := &jsonHidden{Hidden: nonNil(a.Hidden), Shown: nonNil(a.Shown), Redacted: nonNil(a.Redacted), Missing: a.Missing}
	if a.HiddenByLandlock {
		h.By = "landlock"
	}
	return h
}

// sandboxEvent is the run's jsonSandbox.
func (d *driver) sandboxEvent() jsonSandbox {
	ev := jsonSandbox{Event: "sandbox", Commands: hiddenOf(d.cmdSandbox)}
	if d.cfg.SandboxAgent {
		ev.Agent = hiddenOf(d.agentSandbox)
		if d.keyMask != nil {
			ev.AgentKeys = d.keyMask.Keys
		}
	}
	return ev
}
