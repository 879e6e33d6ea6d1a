package client

import (
	"io"
	"os"
	"strings"

	"github.com/acpterm/acpterm/internal/textsafe"
)

// agentStderr copies one line of the agent's stderr to ours. The agent
// writes what it likes there, so the line is sanitized like everything
// else it sends (textsafe.Log): on a colour terminal its SGR colours are
// kept, since agents colour their logs and that is harmless once the line
// ends with a reset; elsewhere they are dropped. Every other escape
// sequence and control character is shown escaped.
func (d *driver) agentStderr(line []byte) {
	s := strings.TrimSuffix(string(line), "\r")
	d.writeStderr(textsafe.Log(s, d.stderrColor()))
}

// stderrColor reports whether our stderr is a terminal that takes colours:
// the text renderer's Color (a TTY on stdout, no NO_COLOR, no --no-color)
// and stderr itself a terminal.
func (d *driver) stderrColor() bool {
	f, ok := d.cfg.Stderr.(*os.File)
	return d.cfg.Text.Color && ok && IsTerminal(f)
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
