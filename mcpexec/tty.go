package mcpexec

import (
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// rendered gives r, for a session on a pty, what the command's screen
// shows that the answers have not given yet, in place of the raw bytes
// (escape sequences, carriage returns, redraws): the rendered text past
// what was shown, or all of it, said so, when the screen changed above
// that (a progress bar drawn again, a full-screen program).
func (c *call) rendered(sess *session, r *result, maxTokens int) {
	if !sess.tty {
		return
	}
	out, err := c.s.rt.TerminalOutput(c.ctx, &acp.TerminalOutputRequest{SessionID: c.s.sid, TerminalID: sess.info.TerminalID})
	if err != nil {
		return // the raw bytes, then
	}
	fresh, again := out.Output, false
	if rest, ok := strings.CutPrefix(out.Output, sess.shown); ok {
		fresh = rest
	} else {
		again = sess.shown != ""
	}
	sess.shown = out.Output
	r.out = newClip(maxTokens * bytesPerToken)
	r.out.add([]byte(fresh))
	if again {
		r.note = joinNote(r.note, "The screen changed above what was shown: its whole text follows")
	}
}

// joinNote adds b to the note a.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
