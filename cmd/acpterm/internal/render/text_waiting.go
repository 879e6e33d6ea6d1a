package render

import (
	"fmt"
	"time"
)

// waitingAfter is how long the agent may be silent during a turn (no
// session/update, no request the renderer hears of) before the live region
// says that acpterm is waiting for it: real agents can think, or hang on a
// network, for minutes with nothing to show.
const waitingAfter = 2 * time.Second

// waitingLine is the live region's "waiting for AGENT · 12s" (r.mu held),
// or "" when the agent spoke lately or no turn is running. The time is how
// long it has been silent, in whole seconds, which is what the user needs
// to decide whether to wait on.
func (r *textRenderer) waitingLine(now time.Time, cols int) string {
	if r.sess.agent == "" || r.finished {
		return ""
	}
	silent := now.Sub(r.sess.heard)
	if silent < waitingAfter {
		return ""
	}
	frame := spinner[int(silent/(100*time.Millisecond))%len(spinner)]
	elapsed := formatDuration(silent.Truncate(time.Second))
	if silent < time.Minute {
		elapsed = fmt.Sprintf("%ds", int(silent/time.Second))
	}
	room := cols - 1 - len(" waiting for ") - len(" · ") - 1 - len(elapsed)
	return r.st.Yellow(frame) + " waiting for " + clipColumns(r.sess.agent, max(room, 1)) + r.st.Dim(" · "+elapsed)
}
