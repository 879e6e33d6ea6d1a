package client

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// switchRenderer is the run's renderer (text or JSON) made afresh for each
// turn: a renderer shows one turn and is done after Finish, while an
// interactive session has many, and a resumed one starts with the replay
// of its history. It marks the replay, and in text shows the user's
// replayed messages, which a turn's renderer has no place for.
//
// Every call holds mu, so that a switch never happens in the middle of
// one, and the marks written between renderers never cut into their
// output.
type switchRenderer struct {
	mu       sync.Mutex
	cur      render.Renderer
	finished bool // cur has shown its Finish
	make     func() render.Renderer
	out      io.Writer
	json     bool
	live     bool // text with a live region: only then is there anything to suspend
	st       render.Style

	replaying bool
	user      strings.Builder // a replayed user message not shown yet (text)

	// screen is where the renderers write, in an interactive session on a
	// terminal: above the prompt line while it is shown (promptAware).
	screen *screenWriter
}

// screenWriter is stdout in an interactive session whose stdout is a
// terminal, the one the line editor draws on: what is written while the
// prompt line is shown goes through the editor, which erases the prompt,
// prints it and draws the prompt and the text typed again.
type screenWriter struct {
	w  io.Writer
	mu sync.Mutex
	ed *lineEditor // nil until the session shows its prompt line
}

func (s *screenWriter) editor() *lineEditor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ed
}

func (s *screenWriter) Write(p []byte) (int, error) {
	if ed := s.editor(); ed != nil {
		if n, ok, err := ed.write(p); ok {
			return n, err
		}
	}
	return s.w.Write(p)
}

// promptAware makes the session's output, and the writes Suspend
// brackets (stderr's), keep clear of ed's prompt line. It does nothing
// when stdout is not the terminal.
func (s *switchRenderer) promptAware(ed *lineEditor) {
	if s.screen == nil {
		return
	}
	s.screen.mu.Lock()
	defer s.screen.mu.Unlock()
	s.screen.ed = ed
}

// maxReplayedUser bounds what is shown of one replayed user message.
const maxReplayedUser = 4 << 10

func newSwitchRenderer(c *Config) *switchRenderer {
	s := &switchRenderer{out: c.Stdout, json: c.Format == FormatJSON, st: render.Style{On: c.Text.Color}}
	s.live = !s.json && c.Text.Live
	if f, ok := c.Stdout.(*os.File); ok && c.Interactive && IsTerminal(f) {
		s.screen = &screenWriter{w: c.Stdout}
		s.out = s.screen
	}
	out := s.out
	text := c.Text
	s.make = func() render.Renderer {
		if s.json {
			return render.NewJSON(out, text.Now)
		}
		return render.NewText(out, &text)
	}
	s.cur = s.make()
	return s
}

var _ render.SessionRenderer = (*switchRenderer)(nil)

// fresh starts a new renderer if the current one has finished: before
// each turn.
func (s *switchRenderer) fresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freshLocked()
}

func (s *switchRenderer) freshLocked() {
	if s.finished {
		s.cur, s.finished = s.make(), false
	}
}

// beginReplay marks the start of a session's replayed history.
func (s *switchRenderer) beginReplay(sid acp.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freshLocked()
	s.replaying = true
	s.mark(sid, "start", "↺ the history of session "+textsafe.Line(render.Clip(string(sid), 80))+", replayed by the agent:")
}

// endReplay shows the rest of the history and marks its end.
func (s *switchRenderer) endReplay(sid acp.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.showUser()
	s.cur.Finish("")
	s.finished = true
	s.replaying = false
	s.mark(sid, "end", "↺ end of the history; the session goes on from here")
}

// resumed notes a session continued with session/resume, which does not
// replay its history.
func (s *switchRenderer) resumed(sid acp.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mark(sid, "resumed", "↺ continuing session "+textsafe.Line(render.Clip(string(sid), 80))+" (the agent does not replay its history)")
}

// mark writes a line of acpterm's own between two renderers (s.mu held):
// a dim note in text, a "replay" event in JSON.
func (s *switchRenderer) mark(sid acp.SessionID, state, text string) {
	if s.json {
		s.emitLocked(struct {
			Event     string        `json:"event"`
			SessionID acp.SessionID `json:"sessionId"`
			State     string        `json:"state"`
		}{"replay", sid, state})
		return
	}
	_, _ = io.WriteString(s.out, s.st.Dim(text)+"\n")
}

// emitJSON writes an event of acpterm's own between two renderers' with
// --format json (still_running); nothing in text.
func (s *switchRenderer) emitJSON(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.json {
		s.emitLocked(v)
	}
}

// emitLocked writes one JSON event (s.mu held), sanitized as the JSON
// renderer's are: it may carry the agent's text.
func (s *switchRenderer) emitLocked(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		_, _ = s.out.Write(textsafe.JSON(buf.Bytes()))
	}
}

// showUser shows the replayed user message gathered so far (s.mu held,
// text only): the renderer of what came before is finished, so that it
// shows all of it first, and a new one takes what follows.
func (s *switchRenderer) showUser() {
	if s.user.Len() == 0 {
		return
	}
	msg := strings.TrimRight(s.user.String(), "\n")
	s.user.Reset()
	s.cur.Finish("")
	var b strings.Builder
	for i, line := range strings.Split(msg, "\n") {
		prefix := "  "
		if i == 0 {
			prefix = s.st.Bold("›") + " "
		}
		b.WriteString(prefix + textsafe.Line(line) + "\n")
	}
	_, _ = io.WriteString(s.out, b.String())
	s.cur = s.make()
}

func (s *switchRenderer) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaying && !s.json {
		if u, ok := n.Update.(*acp.UserMessageChunk); ok {
			if t := render.ContentText(u.Content); s.user.Len()+len(t) <= maxReplayedUser {
				s.user.WriteString(t)
			}
			return
		}
		s.showUser()
	}
	s.cur.SessionUpdate(n, raw)
}

func (s *switchRenderer) TerminalEvent(ev terminal.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.TerminalEvent(ev)
}

func (s *switchRenderer) Permission(p render.PermissionEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Permission(p)
}

func (s *switchRenderer) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Tick()
}

func (s *switchRenderer) Suspend() func() {
	show := func() {}
	if s.screen != nil {
		if ed := s.screen.editor(); ed != nil {
			show = ed.hide()
		}
	}
	if !s.live {
		if s.screen != nil {
			return show
		}
		// Nothing to hide, and no lock to take: a renderer blocked
		// writing to a stdout nobody reads holds it, and a warning on
		// stderr (the interrupt's) must not wait for that.
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resume := s.cur.Suspend()
	return func() {
		resume()
		show()
	}
}

func (s *switchRenderer) Finish(reason acp.StopReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return // the turn's renderer showed its end already
	}
	s.cur.Finish(reason)
	s.finished = true
}

func (s *switchRenderer) Error(message string, exitCode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Error(message, exitCode)
}

func (s *switchRenderer) ShowSession(in render.SessionInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr, ok := s.cur.(render.SessionRenderer); ok {
		sr.ShowSession(in)
	}
}

func (s *switchRenderer) StartTurn(agent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr, ok := s.cur.(render.SessionRenderer); ok {
		sr.StartTurn(agent)
	}
}
