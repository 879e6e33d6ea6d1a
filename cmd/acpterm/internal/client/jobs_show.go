package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/jobs"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// What the session shows of its background work (jobs_v1.go keeps it):
// a line after each turn that leaves some running, /jobs and /cancel in
// an interactive session, and what is left when the run ends.

// Bounds of the lists shown: /jobs, and the one at exit.
const (
	maxJobsListed = 50
	maxJobsAtExit = 10
	maxJobLabel   = 120
)

// stopTerminal stops one of acpterm's terminals for /cancel, as
// terminal/kill does (SIGTERM to its process group, the kill grace, then
// SIGKILL): the agent sees the command exit, and the terminal stays until
// the agent releases it. It returns once the command has exited, having
// recorded how, or when ctx ends.
func (d *driver) stopTerminal(ctx context.Context, sid acp.SessionID, tid acp.TerminalID) error {
	if _, err := d.mgr.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: sid, TerminalID: tid}); err != nil {
		return err
	}
	st, err := d.mgr.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: sid, TerminalID: tid})
	if err != nil {
		return err
	}
	d.jobs.t.EndTerminal(string(tid), acp.TerminalExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}.String())
	return nil
}

// killGrace is the time between SIGTERM and SIGKILL of a terminal.
func (d *driver) killGrace() time.Duration {
	if d.cfg.KillGrace > 0 {
		return d.cfg.KillGrace
	}
	return terminal.DefaultKillGrace
}

// countRunning is how many items are running: listed and not kept.
func (d *driver) countRunning() int {
	items, more := d.jobs.t.Running()
	return len(items) + more
}

// sayRunning is the line after a turn that leaves work running.
func (d *driver) sayRunning() {
	if n := d.countRunning(); n > 0 {
		d.say(d.sw.st.Dim(fmt.Sprintf("%d still running: /jobs to list, /cancel ID to stop one", n)))
	}
}

// listJobs is /jobs.
func (d *driver) listJobs() {
	items, more := d.jobs.t.Running()
	if len(items) == 0 && more == 0 {
		d.say("nothing is running in the background")
		return
	}
	now := time.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %-13s %-7s %-8s %s\n", "ID", "KIND", "AGE", "CAN STOP", "WHAT")
	agents := false
	for i, it := range items {
		if i == maxJobsListed {
			fmt.Fprintf(&b, "… and %d more\n", len(items)-i)
			break
		}
		stop := "yes"
		switch {
		case it.State == jobs.Stopping:
			stop = "stopping"
		case it.Cancel == nil:
			stop, agents = "no", true
		}
		fmt.Fprintf(&b, "%-4d %-13s %-7s %-8s %s\n", it.Ref, it.Kind, ageText(now.Sub(it.Started)), stop, jobLabel(it))
	}
	if more > 0 {
		fmt.Fprintf(&b, "… and %d more that acpterm does not keep track of (it keeps %d)\n", more, jobs.DefaultMax)
	}
	switch {
	case agents && d.jobs.isV2():
		b.WriteString("/cancel ID stops an item the agent offers to stop; it does not offer the others\n")
	case agents:
		b.WriteString("/cancel ID stops a terminal; ACP v1 has no way to stop what the agent runs itself (Ctrl-C during a turn cancels the turn)\n")
	}
	d.say(strings.TrimRight(b.String(), "\n"))
}

// cancelJob is /cancel ID.
func (d *driver) cancelJob(ctx context.Context, ref string) {
	if ref == "" {
		d.say("acpterm: /cancel needs the ID of what to stop; /jobs lists them")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.killGrace()+10*time.Second)
	defer cancel()
	it, err := d.jobs.t.Stop(ctx, ref)
	name := fmt.Sprintf("%d (%s %s)", it.Ref, it.Kind, jobLabel(it))
	switch {
	case errors.Is(err, jobs.ErrUnknown):
		d.say(fmt.Sprintf("acpterm: nothing running is called %s; /jobs lists what is", textsafe.Line(render.Clip(ref, 60))))
	case errors.Is(err, jobs.ErrEnded):
		d.say(fmt.Sprintf("acpterm: %s has ended already (%s)", name, textsafe.Line(it.How)))
	case errors.Is(err, jobs.ErrStopping):
		d.say(fmt.Sprintf("acpterm: %s is being stopped already", name))
	case errors.Is(err, jobs.ErrCannotStop):
		d.say(fmt.Sprintf("acpterm: %s cannot be stopped: %s", name, it.NoCancel))
	case err != nil:
		d.say(fmt.Sprintf("acpterm: could not stop %s: %s", name, textsafe.Line(render.Clip(err.Error(), maxWarnLine))))
	case it.State == jobs.Ended && it.Kind == jobs.ClientTerminal:
		d.say(fmt.Sprintf("stopped %s: %s; the terminal stays until the agent releases it", name, textsafe.Line(it.How)))
	case it.State == jobs.Ended:
		d.say(fmt.Sprintf("stopped %s: %s", name, textsafe.Line(it.How)))
	default:
		d.say(fmt.Sprintf("stopping %s", name))
	}
}

// jobLabel is an item's label as shown: one line, clipped.
func jobLabel(it jobs.Item) string {
	if it.Label == "" {
		return "(not named yet)"
	}
	return textsafe.Line(render.Clip(it.Label, maxJobLabel))
}

// ageText is a short age: 12s, 3m05s, 2h04m.
func ageText(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// atExit says what becomes of an item when acpterm exits: its terminals
// are released (killed, as the runtime does at the end of a session);
// what the agent runs itself ends with the agent, which is shut down and
// whose process group (or cgroup) is killed.
func atExit(it jobs.Item) (wire, text string) {
	if it.Kind == jobs.ClientTerminal {
		return "killed", "killed now: acpterm's terminals end with it"
	}
	return "agent_shutdown", "the agent's own: stopped as the agent is shut down, with its process group or cgroup"
}

// leftAtExit is what is still running as the run ends, before the
// terminals are released: nothing when the agent and its terminals were
// killed outright (a second interrupt).
func (d *driver) leftAtExit() ([]jobs.Item, int) {
	if d.wasKilled() {
		return nil, 0
	}
	return d.jobs.t.Running()
}

// showLeft says on stderr what was still running as the run ended, and
// what becomes of it.
func (d *driver) showLeft(items []jobs.Item, more int) {
	if len(items)+more == 0 {
		return
	}
	now := time.Now()
	d.writeStderr(fmt.Sprintf("acpterm: %d still running as acpterm exits:", len(items)+more))
	for i, it := range items {
		if i == maxJobsAtExit {
			more += len(items) - i
			break
		}
		_, fate := atExit(it)
		d.writeStderr(fmt.Sprintf("  %d %s, %s: %s — %s", it.Ref, it.Kind, ageText(now.Sub(it.Started)), jobLabel(it), fate))
	}
	if more > 0 {
		d.writeStderr(fmt.Sprintf("  and %d more", more))
	}
}

// jsonStillRunning is the still_running event of --format json: what was
// running as the run ended, before its stop or error event.
type jsonStillRunning struct {
	Event string            `json:"event"`
	Items []jsonRunningItem `json:"items"`
	// More counts the items not listed: beyond what acpterm keeps track of.
	More int `json:"more"`
}

type jsonRunningItem struct {
	Ref         int    `json:"ref"`
	Kind        string `json:"kind"` // terminal, display_terminal, tool_call
	ID          string `json:"id"`   // the terminal's or tool call's
	SessionID   string `json:"sessionId"`
	Label       string `json:"label"`
	AgeMs       int64  `json:"ageMs"`
	Cancellable bool   `json:"cancellable"`
	AtExit      string `json:"atExit"` // killed, agent_shutdown
}

func stillRunningEvent(items []jobs.Item, more int) jsonStillRunning {
	now := time.Now()
	ev := jsonStillRunning{Event: "still_running", Items: []jsonRunningItem{}, More: more}
	for _, it := range items {
		wire, _ := atExit(it)
		ev.Items = append(ev.Items, jsonRunningItem{Ref: it.Ref, Kind: it.Kind.Name(), ID: it.ID, SessionID: it.SessionID,
			Label: it.Label, AgeMs: max(now.Sub(it.Started).Milliseconds(), 0), Cancellable: it.Cancel != nil, AtExit: wire})
	}
	return ev
}
