package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// textSession is what the text renderer keeps of the session beside the
// turn itself: the slash commands (shown once), the latest usage (shown at
// the end) and the waiting line's clock (text_waiting.go).
type textSession struct {
	agent         string    // for the waiting line; "" before StartTurn
	heard         time.Time // the last sign of the agent
	commandsShown bool
	usage         *acp.UsageUpdate
}

var (
	_ SessionRenderer = (*textRenderer)(nil)
	_ SessionRenderer = (*jsonRenderer)(nil)
)

// sessionLine is the one line that shows the mode and model ("" when the
// agent offers neither). The agent's IDs and names go through textsafe.
func sessionLine(in SessionInfo) string {
	var parts []string
	add := func(what, id, name string) {
		if id == "" {
			return
		}
		s := what + " " + textsafe.Line(Clip(id, 80))
		if name != "" && !strings.EqualFold(name, id) {
			s += " (" + textsafe.Line(Clip(name, 80)) + ")"
		}
		parts = append(parts, s)
	}
	add("mode", in.Mode, in.ModeName)
	model, name := shownModel(in.Model, in.ModelName)
	add("model", model, name)
	return strings.Join(parts, " · ")
}

// shownModel is how the model line names a model. Some agents' model IDs
// are internal keys made of several parts (qwen's
// "$runtime|openai|mock-model(openai)"): such an ID is shown by the
// agent's name for it alone, else by its last part, which names the model.
// A plain ID is shown as it is, with the name beside it. The JSON events
// keep the whole ID, which is what /model and --model take.
func shownModel(id, name string) (string, string) {
	if !strings.ContainsAny(id, "|$ \t") {
		return id, name
	}
	if strings.TrimSpace(name) != "" {
		return name, ""
	}
	parts := strings.FieldsFunc(id, func(r rune) bool { return r == '|' })
	for i := len(parts) - 1; i >= 0; i-- {
		if p := strings.TrimSpace(parts[i]); p != "" {
			return p, ""
		}
	}
	return id, ""
}

func (r *textRenderer) ShowSession(in SessionInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := sessionLine(in)
	if r.finished || line == "" {
		return
	}
	r.endText()
	r.push(itemNote, r.st.Dim(line)+"\n")
	r.flush(false)
}

func (r *textRenderer) StartTurn(agent string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sess.agent = textsafe.Line(Clip(agent, 60))
	r.sess.heard = r.o.Now()
}

// Bounds of the slash command line: an agent may send hundreds.
const (
	maxCommandsShown   = 30
	maxCommandNameSize = 40
)

// showCommands shows the agent's slash commands, names only, the first
// time it sends them (r.mu held): later updates are the same list again
// or a small change not worth a line in a one-shot run.
func (r *textRenderer) showCommands(cmds []acp.AvailableCommand) {
	if r.sess.commandsShown || len(cmds) == 0 {
		return
	}
	r.sess.commandsShown = true
	var b strings.Builder
	b.WriteString("commands:")
	for i, c := range cmds {
		if i == maxCommandsShown {
			fmt.Fprintf(&b, " … +%d more", len(cmds)-i)
			break
		}
		b.WriteString(" /" + textsafe.Line(Clip(c.Name, maxCommandNameSize)))
	}
	r.endText()
	r.push(itemNote, r.st.Dim(b.String())+"\n")
}

// usageLine is the last usage_update as one line ("" when none came).
func (r *textRenderer) usageLine() string {
	u := r.sess.usage
	if u == nil {
		return ""
	}
	s := fmt.Sprintf("context: %s / %s tokens", GroupDigits(u.Used), GroupDigits(u.Size))
	if u.Cost != nil {
		s += " · cost " + amount(u.Cost.Amount) + " " + textsafe.Line(Clip(u.Cost.Currency, 16))
	}
	return r.st.Dim(s) + "\n"
}

// amount words a cost: to the millionth, without trailing zeros, so that
// a sum of float costs (0.00028000000000000003) reads as it was meant.
func amount(x float64) string {
	s := strconv.FormatFloat(x, 'f', 6, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// jsonSession is the "session" event: the mode and model the turn starts
// with, then each change.
type jsonSession struct {
	Event     string        `json:"event"`
	SessionID acp.SessionID `json:"sessionId"`
	Mode      string        `json:"mode,omitempty"`
	Model     string        `json:"model,omitempty"`
}

func (r *jsonRenderer) ShowSession(in SessionInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(jsonSession{Event: "session", SessionID: in.SessionID, Mode: in.Mode, Model: in.Model})
}

func (r *jsonRenderer) StartTurn(string) {}
