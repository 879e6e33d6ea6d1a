package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// builtinCommands are acpterm's own in-session commands, with their help.
// They take precedence over the agent's commands of the same name.
var builtinCommands = []struct{ name, args, help string }{
	{"help", "", "list the commands"},
	{"mode", "[ID]", "show the session's mode and the modes offered, or switch to ID"},
	{"model", "[ID]", "show the session's model and the models offered, or switch to ID"},
	{"jobs", "", "list what still runs in the background: terminals, the agent's own commands, open tool calls"},
	{"cancel", "ID", "stop a terminal still running in the background (its ID in /jobs)"},
	{"attach", "[ID]", "type into a running pty terminal (a password prompt): its screen is shown, keys go to it, Ctrl-] detaches"},
	{"send", "[ID] TEXT", "send TEXT and Enter to a running terminal that takes input (a pty, or a pipe with stdin)"},
	{"exit", "", "end the session (so do Ctrl-D, and Ctrl-C at an empty line)"},
}

// Bounds of the agent's commands /help lists: how many, and how many
// bytes of each name.
const (
	maxHelpCommands    = 100
	maxHelpCommandName = 40
)

// command runs an in-session command: a line that starts with "/". It
// reports whether the line is to be sent to the agent as a prompt instead
// (it names one of the agent's slash commands, or is a path), and whether
// the session is over, with its exit status.
func (d *driver) command(ctx context.Context, line string) (prompt, end bool, code int) {
	name, arg, _ := strings.Cut(line[1:], " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "exit", "quit":
		return false, true, ExitOK
	case "help":
		d.showHelp()
		return false, false, ExitOK
	case "mode":
		return false, d.setCommand(ctx, settingMode, arg), ExitOK
	case "model":
		return false, d.setCommand(ctx, settingModel, arg), ExitOK
	case "jobs":
		d.listJobs()
		return false, false, ExitOK
	case "cancel":
		d.cancelJob(ctx, arg)
		return false, d.quitting() || d.agentGone(), ExitOK
	case "attach":
		d.attachCommand(ctx, arg)
		// An interrupt while attached ends the session, as at the
		// prompt line.
		return false, d.quitting(), ExitCancelled
	case "send":
		d.sendCommand(ctx, arg)
		return false, false, ExitOK
	}
	if d.agentCommand(name) != nil || strings.Contains(name, "/") {
		return true, false, ExitOK
	}
	d.say(fmt.Sprintf("acpterm: unknown command /%s; /help lists the commands", textsafe.Line(render.Clip(name, 60))))
	return false, false, ExitOK
}

// agentCommand is the agent's slash command called name, or nil.
func (d *driver) agentCommand(name string) *acp.AvailableCommand {
	cmds := d.view.availableCommands()
	for i := range cmds {
		if cmds[i].Name == name {
			return &cmds[i]
		}
	}
	return nil
}

// showHelp lists acpterm's commands, then the agent's (its text
// sanitized and clipped, the list bounded).
func (d *driver) showHelp() {
	var b strings.Builder
	b.WriteString("acpterm's commands:\n")
	for _, c := range builtinCommands {
		fmt.Fprintf(&b, "  %-14s %s\n", "/"+strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	cmds := d.view.availableCommands()
	if len(cmds) == 0 {
		b.WriteString("The agent has sent no slash commands.")
	} else {
		b.WriteString("The agent's commands (sent to it as a prompt, with what follows):\n")
		for i, c := range cmds {
			if i == maxHelpCommands {
				fmt.Fprintf(&b, "  … and %d more\n", len(cmds)-i)
				break
			}
			name := "/" + textsafe.Line(render.Clip(c.Name, maxHelpCommandName))
			if in, ok := c.Input.(*acp.UnstructuredCommandInput); ok && in.Hint != "" {
				name += " " + textsafe.Line(render.Clip(in.Hint, 30))
			}
			fmt.Fprintf(&b, "  %-14s %s\n", name, textsafe.Line(render.Clip(c.Description, 200)))
		}
	}
	d.say(strings.TrimRight(b.String(), "\n"))
}

// maxCommandMessage bounds the message a failed /mode or /model shows,
// in bytes: room for the choices listChoices lists.
const maxCommandMessage = 4 << 10

// setting is what /mode and /model show and switch.
type setting uint8

const (
	settingMode setting = iota
	settingModel
)

func (s setting) String() string {
	if s == settingMode {
		return "mode"
	}
	return "model"
}

// setCommand is /mode and /model: with no argument it shows the current
// one and the choices; with one it switches, or says what the valid
// choices are. It reports whether the session is over (the agent died
// or an interrupt came meanwhile).
func (d *driver) setCommand(ctx context.Context, what setting, want string) bool {
	v := d.view
	if want == "" {
		d.say(currentAndChoices(what, v.snapshot()))
		return false
	}
	var code int
	var msg string
	if what == settingMode {
		code, msg = d.setMode(ctx, v, "/mode", want)
	} else {
		code, msg = d.setModel(ctx, v, "/model", want)
	}
	switch {
	case d.quitting() || d.agentGone():
		if msg != "" {
			d.warn("acpterm: " + msg)
		}
		return true
	case code != ExitOK:
		// The message may quote the agent (its error for set_mode, of
		// any length): one line, clipped.
		d.say("acpterm: " + textsafe.Line(render.Clip(msg, maxCommandMessage)))
	default:
		d.say(currentAndChoices(what, v.snapshot()))
	}
	return false
}

// currentAndChoices describes the session's mode or model and the valid
// choices, from the agent's modes or its config option of that category.
func currentAndChoices(what setting, st sessionState) string {
	in := st.info()
	cur, curName := in.Mode, in.ModeName
	var choices []choice
	if what == settingMode {
		if st.modes != nil && len(st.modes.AvailableModes) > 0 {
			choices = modeChoices(st.modes)
		} else if o := findOptionByCategory(st.options, acp.SessionConfigOptionCategoryMode); o != nil {
			choices = valueChoices(o)
		}
	} else {
		cur, curName = in.Model, in.ModelName
		if o := findOptionByCategory(st.options, acp.SessionConfigOptionCategoryModel); o != nil {
			choices = valueChoices(o)
		} else if st.models != nil {
			choices = modelChoices(st.models)
		}
	}
	if len(choices) == 0 && cur == "" {
		return "the agent offers no " + what.String() + " choice"
	}
	s := what.String() + ": " + textsafe.Line(render.Clip(cur, 80))
	if curName != "" && !strings.EqualFold(curName, cur) {
		s += " (" + textsafe.Line(render.Clip(curName, 80)) + ")"
	}
	return s + "\nchoices: " + listChoices(choices)
}

// maxCompletion bounds the command name Tab types for the user: a name
// the agent made longer than any command would fill the prompt line.
const maxCompletion = 256

// completeCommand completes the command being typed on Tab: the one
// command, acpterm's or the agent's, that starts with what was typed. It
// looks at each name once, copying and sorting nothing: the agent's list
// may be of any length, and Tab may be pressed at every key.
func (d *driver) completeCommand(line string) (string, bool) {
	if !strings.HasPrefix(line, "/") || strings.Contains(line, " ") {
		return "", false
	}
	typed := line[1:]
	found, ambiguous := "", false
	consider := func(n string) {
		switch {
		case !strings.HasPrefix(n, typed) || n == found:
		case found != "":
			ambiguous = true
		default:
			found = n
		}
	}
	for _, c := range builtinCommands {
		consider(c.name)
	}
	for _, c := range d.view.availableCommands() {
		if ambiguous {
			break
		}
		consider(c.Name)
	}
	// The agent's name is its text: a completion that is not plain
	// printable text is not typed for the user.
	if ambiguous || found == "" || len(found) > maxCompletion || textsafe.Line(found) != found {
		return "", false
	}
	return "/" + found + " ", true
}
