package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/terminal"
)

// Renderer shows a turn: the agent's session updates, the terminals it
// runs and the permission decisions taken for it. Its methods are safe for
// concurrent use: updates, terminal events and permission decisions come
// from different goroutines.
type Renderer interface {
	// SessionUpdate shows one session/update notification; raw is its
	// params as received, or nil when they are not at hand.
	SessionUpdate(n *acp.SessionNotification, raw json.RawMessage)
	// TerminalEvent shows what happened to a terminal (live output, exit).
	TerminalEvent(ev terminal.Event)
	// Permission records a permission decision.
	Permission(p PermissionEvent)
	// Tick lets time-driven display advance (elapsed times on a TTY).
	Tick()
	// Suspend stops drawing, clearing any redrawn region, so that
	// something else can write to the screen (a question, a log line);
	// the returned function resumes. Suspensions nest.
	Suspend() (resume func())
	// Finish shows the rest of the turn and how it ended. An empty reason
	// means the turn ended in an error (see Error).
	Finish(reason acp.StopReason)
	// Error reports the failure that ended the run, with the exit status.
	// The text renderer leaves it to the caller (it goes to stderr).
	Error(message string, exitCode int)
}

// PermissionEvent is a permission decision: the answer to a
// session/request_permission, or to a terminal/create (TerminalCommand set).
type PermissionEvent struct {
	SessionID  acp.SessionID
	ToolCallID acp.ToolCallID
	Title      string
	// Decision is the kind of the option chosen (allow_once, allow_always,
	// reject_once, reject_always) or "cancelled".
	Decision string
	// OptionID is the option chosen; empty for terminal decisions and
	// cancelled ones.
	OptionID acp.PermissionOptionID
	// TerminalCommand is the command line of a terminal/create decision.
	TerminalCommand string
	// Reason says why, for a decision nobody typed ("--deny-all", "no TTY").
	Reason string
}

// SessionInfo is the state of the session that a user cares to see: the
// current mode and model, as IDs and, when the agent named them, names.
// Empty fields mean the agent offers no such choice.
type SessionInfo struct {
	SessionID acp.SessionID
	Mode      string
	ModeName  string
	Model     string
	ModelName string
}

// SessionRenderer is implemented by renderers that show the session's
// state and the waiting line: both of this package. An optional interface
// keeps Renderer small for the renderers that do not care.
type SessionRenderer interface {
	// ShowSession shows the current mode and model: once before the
	// prompt, then after each change.
	ShowSession(info SessionInfo)
	// StartTurn marks the moment the prompt is sent; agent names the agent
	// for the waiting line.
	StartTurn(agent string)
}

// Clock is where renderers take the time; tests pass a fake one.
type Clock func() time.Time

// Clip cuts s to at most n bytes at a character start, marking the cut
// with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return utf8cut.Head(s, n) + "…"
}

// GroupDigits writes n with thousands separators: 200,000.
func GroupDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formatDuration is a short, human duration: 12ms, 3.4s, 2m05s.
func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// formatBytes is a size in binary units: 512 B, 4.0 KiB, 16 MiB.
func formatBytes(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	case n < 1<<30:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<30))) + " GiB"
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}

// statusText describes an exit status for people, in the words
// acp.TerminalExitStatus.String uses everywhere, after "timed out, " when
// the manager's timeout killed the command (terminal.Event.TimedOut). A
// display terminal's signal is the agent's text, hence textsafe.Line.
func statusText(st *terminal.ExitStatus, timedOut bool) string {
	if st == nil {
		return "still running"
	}
	s := st.String()
	if timedOut {
		s = "timed out, " + s
	}
	return textsafe.Line(s)
}

func statusFailed(st *terminal.ExitStatus, timedOut bool) bool {
	return st != nil && (st.Signal != nil || timedOut || (st.ExitCode != nil && *st.ExitCode != 0))
}

// commandLine is how a terminal's command is shown and reported
// (textsafe.CommandLine: a shell line as it is, an argv with each word
// quoted). It is the agent's text: the text renderer passes it through
// textsafe.Line, and a permission question shows package permission's
// promptCommand instead.
func commandLine(info *terminal.Info) string {
	if info == nil {
		return ""
	}
	return textsafe.CommandLine(info.Command, info.Args)
}
