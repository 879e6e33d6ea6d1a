package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
)

// hostileCommandsDriver is a driver whose agent sent n slash commands.
func hostileCommandsDriver(n int) *driver {
	d := &driver{view: newSessionView(render.NewText(io.Discard, nil))}
	cmds := make([]acp.AvailableCommand, n)
	for i := range cmds {
		cmds[i].Name = fmt.Sprintf("cmd%07d", i)
	}
	d.view.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.AvailableCommandsUpdate{AvailableCommands: cmds}}, nil)
	return d
}

// TestCompleteCommandManyCommands: what Tab costs does not grow with the
// number of commands the agent sent beyond looking at each once: no copy
// of the names and no sort for every key. (Allocations, which a loaded
// machine does not change.)
func TestCompleteCommandManyCommands(t *testing.T) {
	cost := func(n int) uint64 {
		d := hostileCommandsDriver(n)
		return rendertest.AllocatedBy(func() {
			for range 10 {
				d.completeCommand("/cmd")
			}
		})
	}
	if few, many := cost(10), cost(100000); many > few+10<<10 {
		t.Fatalf("10 Tabs allocated %d bytes with 100000 agent commands, %d with 10", many, few)
	}
	// It still completes the one command that fits, the same name twice
	// being one, and nothing when two do.
	d := hostileCommandsDriver(3)
	d.view.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{
		{Name: "review"}, {Name: "review"}, {Name: "mode"}, {Name: "evil\x1b[2J"}, {Name: strings.Repeat("l", 1<<20)}}}}, nil)
	for line, want := range map[string]string{"/rev": "/review ", "/he": "/help ", "/mo": "", "/ev": "", "/ll": "", "/x": "", "rev": ""} {
		if got, ok := d.completeCommand(line); got != want || ok != (want != "") {
			t.Errorf("completeCommand(%q) = %.40q, %v; want %q", line, got, ok, want)
		}
	}
}

// TestModeUpdatesManyModels: a current_mode_update is a few bytes; what
// it costs must not grow with the models offered in a grouped select
// option, which the agent sent once.
func TestModeUpdatesManyModels(t *testing.T) {
	cost := func(n int) uint64 {
		values := make([]acp.SessionConfigSelectOption, n)
		for i := range values {
			values[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueID(fmt.Sprint("m", i)), Name: "M"}
		}
		model := acp.SessionConfigOptionCategoryModel
		v := newSessionView(render.NewText(io.Discard, nil))
		v.setState(&sessionState{sid: "s",
			modes: &acp.SessionModeState{CurrentModeID: "a", AvailableModes: []acp.SessionMode{{ID: "a"}, {ID: "b"}}},
			options: []acp.SessionConfigOption{{ID: "model", Category: &model, Kind: &acp.SessionConfigSelect{CurrentValue: "m0",
				Options: acp.SessionConfigSelectGroupList{{Group: "g1", Options: values[:n/2]}, {Group: "g2", Options: values[n/2:]}}}}}})
		v.start("agent")
		return rendertest.AllocatedBy(func() {
			for i := range 20 {
				v.SessionUpdate(&acp.SessionNotification{SessionID: "s", Update: &acp.CurrentModeUpdate{CurrentModeID: acp.SessionModeID([]string{"a", "b"}[i%2])}}, nil)
			}
		})
	}
	if few, many := cost(10), cost(100000); many > 2*few+64<<10 {
		t.Fatalf("20 mode updates allocated %d bytes with 100000 models, %d with 10", many, few)
	}
}

// longRefuser refuses session/set_mode with a message of a MiB.
type longRefuser struct{ modeRefuser }

func (longRefuser) SetSessionMode(context.Context, *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: "no " + strings.Repeat("x", 1<<20)}
}

// TestSetCommandAgentErrorClipped: the agent's error for /mode is shown
// as one line of the session's terminal, clipped, not a MiB of it.
func TestSetCommandAgentErrorClipped(t *testing.T) {
	got := refusedModeOutput(t, longRefuser{})
	if len(got) > 8<<10 || strings.Count(got, "\n") != 1 || !strings.Contains(got, "no xxx") {
		t.Fatalf("the agent's error took %d bytes, %d lines: %.200q", len(got), strings.Count(got, "\n"), got)
	}
}

// A diagnostic line quoting the agent is one sanitized line of bounded
// length, whatever the agent's text.
func TestWarnLineBounded(t *testing.T) {
	got := warnLine("acpterm: the agent said: " + strings.Repeat("\x1b[2J", 1<<18) + "\n")
	if len(got) > 4*maxWarnLine+len("…") || strings.ContainsAny(got, "\x1b\n") {
		t.Fatalf("warn line of %d bytes: %.80q", len(got), got)
	}
}
