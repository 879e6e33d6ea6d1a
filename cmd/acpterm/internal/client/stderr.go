package client

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// AgentStderr is what becomes of the agent's stderr (Config.AgentStderr).
// Whatever the choice, each line is sanitized like everything else the
// agent sends (textsafe.Log).
type AgentStderr int

const (
	// AgentStderrAuto, the default: where acpterm's stderr is a terminal,
	// the agent's lines are held while a turn runs, so that they never
	// land between a tool call and the reply, and shown when it ends,
	// dimmed and prefixed with the agent's name: a few of them
	// (quietStderrLines) as they are, more as a one-line count when the
	// turn succeeded, the last heldStderrLines when it failed. Elsewhere
	// every line is copied as it comes, as AgentStderrShow does.
	AgentStderrAuto AgentStderr = iota
	// AgentStderrShow copies every line as it comes (dimmed and prefixed
	// on a terminal).
	AgentStderrShow
	// AgentStderrHide drops it.
	AgentStderrHide
	// AgentStderrFile writes every line to Config.AgentStderrTo.
	AgentStderrFile
)

// Bounds of the held stderr of AgentStderrAuto. Up to quietStderrLines
// lines of a successful turn are worth showing (a warning or two); more is
// the agent's chatter (gemini writes 8 lines of start-up notes, npx its
// notices) and becomes a count. A failed turn shows its last
// heldStderrLines lines, each clipped to maxWarnLine: the memory held is
// bounded whatever the agent writes.
const (
	quietStderrLines = 3
	// stderrCatchUp bounds how long a flush waits for the pump to read
	// what is already in the pipe.
	stderrCatchUp   = 200 * time.Millisecond
	heldStderrLines = 20
)

// ParseAgentStderr reads the value of --agent-stderr: "show", "hide", or
// the path of a file (AgentStderrFile, path returned); "" is refused.
func ParseAgentStderr(s string) (mode AgentStderr, path string, err error) {
	switch s {
	case "show":
		return AgentStderrShow, "", nil
	case "hide":
		return AgentStderrHide, "", nil
	case "":
		return 0, "", fmt.Errorf("--agent-stderr wants show, hide or a file")
	}
	return AgentStderrFile, s, nil
}

// heldStderr is the agent's stderr held by AgentStderrAuto: how many lines
// came since the last flush, and the last heldStderrLines of them.
type heldStderr struct {
	mu   sync.Mutex
	n    int
	ring [heldStderrLines]string
}

func (h *heldStderr) add(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.n%heldStderrLines] = line
	h.n++
}

// take returns the number of lines held and the last of them, oldest
// first, and empties the holder.
func (h *heldStderr) take() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	k := min(n, heldStderrLines)
	lines := make([]string, 0, k)
	for i := n - k; i < n; i++ {
		lines = append(lines, h.ring[i%heldStderrLines])
	}
	h.n, h.ring = 0, [heldStderrLines]string{}
	return n, lines
}

// agentStderr handles one line of the agent's stderr (see AgentStderr).
// On a colour terminal, a line copied as it is keeps the agent's SGR
// colours, harmless once the line ends with a reset; a dimmed one drops
// them (a reset would end the dimming). Every other escape sequence and
// control character is shown escaped.
func (d *driver) agentStderr(line []byte) {
	s := strings.TrimSuffix(string(line), "\r")
	switch d.stderrMode() {
	case AgentStderrHide:
	case AgentStderrFile:
		if w := d.cfg.AgentStderrTo; w != nil {
			_, _ = io.WriteString(w, textsafe.Log(s, false)+"\n")
		}
	case AgentStderrAuto:
		d.held.add(d.styleStderr(render.Clip(s, maxWarnLine)))
	default:
		if d.stderrTTY() {
			d.writeStderr(d.styleStderr(s))
			return
		}
		d.writeStderr(textsafe.Log(s, d.stderrColor()))
	}
}

// stderrMode is Config.AgentStderr with AgentStderrAuto resolved: it holds
// lines only where our stderr is a terminal.
func (d *driver) stderrMode() AgentStderr {
	m := d.cfg.AgentStderr
	if m == AgentStderrAuto && !d.stderrTTY() {
		return AgentStderrShow
	}
	return m
}

// styleStderr is a line of the agent's stderr as shown on a terminal:
// prefixed with the agent's name, dimmed.
func (d *driver) styleStderr(s string) string {
	return render.Style{On: d.stderrColor()}.Dim(d.agentLabel() + ": " + textsafe.Log(s, false))
}

// agentLabel names the agent in what acpterm says about its stderr: the
// name it was started by, else its program's base name.
func (d *driver) agentLabel() string {
	name := d.cfg.AgentName
	if name == "" && len(d.cfg.Agent) > 0 {
		name = filepath.Base(d.cfg.Agent[0])
	}
	return textsafe.Line(render.Clip(name, 64))
}

// flushStderr shows what AgentStderrAuto held since the last flush: the
// last lines when failed, else the lines if they are few, or their count.
func (d *driver) flushStderr(failed bool) {
	if d.stderrMode() != AgentStderrAuto {
		return
	}
	// What the agent wrote before its answer is in the pipe by now: it
	// is counted with the rest, not shown apart when read late.
	d.errPump.catchUp(stderrCatchUp)
	n, lines := d.held.take()
	st := render.Style{On: d.stderrColor()}
	switch {
	case n == 0:
		return
	case failed && n > len(lines):
		d.writeStderr(st.Dim(fmt.Sprintf("%s wrote %d lines on stderr; the last %d:", d.agentLabel(), n, len(lines))))
	case failed:
		d.writeStderr(st.Dim(fmt.Sprintf("%s wrote on stderr:", d.agentLabel())))
	case n > quietStderrLines:
		d.writeStderr(st.Dim(fmt.Sprintf("%s wrote %d lines on stderr (not shown; --agent-stderr show shows them)", d.agentLabel(), n)))
		return
	}
	for _, l := range lines {
		d.writeStderr(l)
	}
}

// stderrTTY reports whether our stderr is a terminal.
func (d *driver) stderrTTY() bool {
	f, ok := d.cfg.Stderr.(*os.File)
	return ok && IsTerminal(f)
}

// stderrColor reports whether our stderr is a terminal that takes colours:
// the text renderer's Color (a TTY on stdout, no NO_COLOR, no --no-color)
// and stderr itself a terminal.
func (d *driver) stderrColor() bool {
	return d.cfg.Text.Color && d.stderrTTY()
}

// writeStderr writes one line, already safe to print, to stderr, out of
// the live region's way.
func (d *driver) writeStderr(line string) {
	resume := d.r.Suspend()
	d.stderrMu.Lock()
	_, _ = io.WriteString(d.cfg.Stderr, line+"\n")
	d.stderrMu.Unlock()
	resume()
}
