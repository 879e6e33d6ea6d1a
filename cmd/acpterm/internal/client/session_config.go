package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/ask"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// SessionSetting is one --set ID=VALUE: a session config option and the
// value to give it.
type SessionSetting struct {
	ID, Value string
}

// sessionState is what the agent told us of its modes and config options:
// the session/new result, then the answers to set_mode and
// set_config_option and the current_mode_update / config_option_update
// notifications. It is owned by sessionView, which locks it.
type sessionState struct {
	sid     acp.SessionID
	modes   *acp.SessionModeState
	options []acp.SessionConfigOption
	models  *acp.SessionModelState // the draft's models (gemini's); see acp.SessionModels
}

// info is the state in the words render.SessionInfo uses. A mode comes
// from modes, else from a config option of category mode (opencode's);
// the model from a config option of category model, else from the
// draft's session models (gemini's).
func (s *sessionState) info() render.SessionInfo {
	in := render.SessionInfo{SessionID: s.sid}
	if s.modes != nil {
		in.Mode = string(s.modes.CurrentModeID)
		for _, m := range s.modes.AvailableModes {
			if m.ID == s.modes.CurrentModeID {
				in.ModeName = m.Name
			}
		}
	} else if o := findOptionByCategory(s.options, acp.SessionConfigOptionCategoryMode); o != nil {
		in.Mode, in.ModeName = selectCurrent(o)
	}
	if o := findOptionByCategory(s.options, acp.SessionConfigOptionCategoryModel); o != nil {
		in.Model, in.ModelName = selectCurrent(o)
	} else if s.models != nil {
		in.Model = s.models.CurrentModelID
		for _, m := range s.models.AvailableModels {
			if m.ModelID == in.Model {
				in.ModelName = m.Name
			}
		}
	}
	return in
}

// modelChoices are the draft's session models as choices.
func modelChoices(models *acp.SessionModelState) []choice {
	var cs []choice
	for _, m := range models.AvailableModels {
		cs = append(cs, choice{ID: m.ModelID, Name: m.Name})
	}
	return cs
}

// findOptionByCategory is the first select option of category cat.
func findOptionByCategory(opts []acp.SessionConfigOption, cat acp.SessionConfigOptionCategory) *acp.SessionConfigOption {
	for i := range opts {
		if opts[i].Category != nil && *opts[i].Category == cat {
			if _, ok := opts[i].Kind.(*acp.SessionConfigSelect); ok {
				return &opts[i]
			}
		}
	}
	return nil
}

// selectCurrent is the current value of a select option and its name.
func selectCurrent(o *acp.SessionConfigOption) (id, name string) {
	sel, ok := o.Kind.(*acp.SessionConfigSelect)
	if !ok {
		return "", ""
	}
	// The groups are searched in place, not flattened (selectValues): this
	// runs on each mode update the agent sends, a few bytes each, and
	// must not copy what it sent once.
	find := func(vs []acp.SessionConfigSelectOption) (string, bool) {
		for _, v := range vs {
			if v.Value == sel.CurrentValue {
				return v.Name, true
			}
		}
		return "", false
	}
	switch o := sel.Options.(type) {
	case acp.SessionConfigSelectOptionList:
		if name, ok := find(o); ok {
			return string(sel.CurrentValue), name
		}
	case acp.SessionConfigSelectGroupList:
		for _, g := range o {
			if name, ok := find(g.Options); ok {
				return string(sel.CurrentValue), name
			}
		}
	}
	return string(sel.CurrentValue), ""
}

// selectValues flattens a select's options, grouped or not.
func selectValues(sel *acp.SessionConfigSelect) []acp.SessionConfigSelectOption {
	switch o := sel.Options.(type) {
	case acp.SessionConfigSelectOptionList:
		return o
	case acp.SessionConfigSelectGroupList:
		var all []acp.SessionConfigSelectOption
		for _, g := range o {
			all = append(all, g.Options...)
		}
		return all
	}
	return nil
}

// choice is a value the user may name (its ID and human name), matched
// by ask.Match.
type choice = ask.Choice

// maxListed bounds the choices listed in an error: an agent may offer
// hundreds of models.
const maxListed = 40

// listChoices lists choices for an error message: IDs, sanitized, bounded.
func listChoices(choices []choice) string {
	if len(choices) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, c := range choices {
		if i == maxListed {
			fmt.Fprintf(&b, " … and %d more", len(choices)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(textsafe.Quote(render.Clip(c.ID, 80)))
	}
	return b.String()
}

func modeChoices(modes *acp.SessionModeState) []choice {
	var cs []choice
	for _, m := range modes.AvailableModes {
		cs = append(cs, choice{ID: string(m.ID), Name: m.Name})
	}
	return cs
}

func optionChoices(opts []acp.SessionConfigOption) []choice {
	var cs []choice
	for _, o := range opts {
		cs = append(cs, choice{ID: string(o.ID), Name: o.Name})
	}
	return cs
}

func valueChoices(o *acp.SessionConfigOption) []choice {
	switch k := o.Kind.(type) {
	case *acp.SessionConfigSelect:
		var cs []choice
		for _, v := range selectValues(k) {
			cs = append(cs, choice{ID: string(v.Value), Name: v.Name})
		}
		return cs
	case *acp.SessionConfigBoolean:
		return []choice{{ID: "true"}, {ID: "false"}}
	}
	return nil
}

// settingChoice is the choice the user named (flag and what are for the
// message), or a message that lists the ones the agent offers.
func settingChoice(flag, what, want string, cs []choice) (id, msg string) {
	id, ok := ask.Match(want, cs)
	if !ok {
		return "", fmt.Sprintf("%s %s: the agent offers no such %s; it offers %s", flag, textsafe.Quote(want), what, listChoices(cs))
	}
	return id, ""
}

// configValue is the session/set_config_option value for the user's
// value of option o, or an error message listing the valid ones.
func configValue(o *acp.SessionConfigOption, flag, want string) (acp.SessionConfigValue, string) {
	id, ok := ask.Match(want, valueChoices(o))
	if !ok {
		if _, known := o.Kind.(*acp.UnknownSessionConfigKind); known {
			return nil, fmt.Sprintf("%s: option %s is of a type acpterm cannot set", flag, textsafe.Quote(string(o.ID)))
		}
		if !strings.HasSuffix(flag, "="+want) { // --set names the value already
			flag += " " + textsafe.Quote(want)
		}
		return nil, fmt.Sprintf("%s: the agent offers no such value for %s; it offers %s", flag, textsafe.Quote(string(o.ID)), listChoices(valueChoices(o)))
	}
	if _, ok := o.Kind.(*acp.SessionConfigBoolean); ok {
		return &acp.SessionConfigBooleanValue{Value: id == "true"}, ""
	}
	return &acp.SessionConfigSelectValue{Value: acp.SessionConfigValueID(id)}, ""
}

// findOption is the option the user named by its ID (or, unambiguously,
// its name).
func findOption(opts []acp.SessionConfigOption, want string) *acp.SessionConfigOption {
	id, ok := ask.Match(want, optionChoices(opts))
	if !ok {
		return nil
	}
	for i := range opts {
		if string(opts[i].ID) == id {
			return &opts[i]
		}
	}
	return nil
}

// configureSession takes the session's state as session/new (or load, or
// resume) gave it, then applies --mode, --model and each --set, in this
// order, before the prompt. Each is checked against what
// the agent offers at that moment (a new model may bring other options),
// so a value the agent does not offer is a usage error that lists the
// valid ones, and nothing is sent for it.
func (d *driver) configureSession(ctx context.Context, v *sessionView, st *sessionState) (int, string) {
	c := &d.cfg
	v.setState(st)
	if c.Mode != "" {
		if code, msg := d.setMode(ctx, v, "--mode", c.Mode); code != ExitOK {
			return code, msg
		}
	} else if id := d.confinedMode(v.snapshot()); id != "" {
		if code, msg := d.setMode(ctx, v, "the agent's confined mode", id); code != ExitOK {
			return code, msg
		}
	}
	if c.Model != "" {
		if code, msg := d.setModel(ctx, v, "--model", c.Model); code != ExitOK {
			return code, msg
		}
	}
	for _, s := range c.Settings {
		flag := "--set " + textsafe.Quote(s.ID+"="+s.Value)
		opts := v.snapshot().options
		o := findOption(opts, s.ID)
		if o == nil {
			return ExitUsage, fmt.Sprintf("%s: the agent offers no such option; it offers %s", flag, listChoices(optionChoices(opts)))
		}
		if code, msg := d.setOption(ctx, v, o, flag, s.Value); code != ExitOK {
			return code, msg
		}
	}
	return ExitOK, ""
}

// setMode switches the session to the mode the user named (flag is how,
// for messages: "--mode", "/mode"): session/set_mode when the agent has
// modes, else its config option of category mode. A mode it does not
// offer is ExitUsage with a message that lists those it does.
func (d *driver) setMode(ctx context.Context, v *sessionView, flag, want string) (int, string) {
	st := v.snapshot()
	switch mo := findOptionByCategory(st.options, acp.SessionConfigOptionCategoryMode); {
	case st.modes != nil && len(st.modes.AvailableModes) > 0:
		id, msg := settingChoice(flag, "mode", want, modeChoices(st.modes))
		if msg != "" {
			return ExitUsage, msg
		}
		callCtx, done := d.callCtx(ctx, d.cfg.InitTimeout)
		defer done()
		_, err := d.conn.SetSessionMode(callCtx, &acp.SetSessionModeRequest{SessionID: st.sid, ModeID: acp.SessionModeID(id)})
		if err != nil {
			return d.callFailed(callCtx, "session/set_mode", err)
		}
		v.setMode(acp.SessionModeID(id))
		return ExitOK, ""
	case mo != nil:
		return d.setOption(ctx, v, mo, flag, want)
	}
	return ExitUsage, flag + ": the agent offers no modes"
}

// setModel switches the session to the model the user named, through the
// agent's config option of category model, else session/set_model when
// the agent offered models the draft's way (gemini).
func (d *driver) setModel(ctx context.Context, v *sessionView, flag, want string) (int, string) {
	st := v.snapshot()
	if mo := findOptionByCategory(st.options, acp.SessionConfigOptionCategoryModel); mo != nil {
		return d.setOption(ctx, v, mo, flag, want)
	}
	if st.models == nil || len(st.models.AvailableModels) == 0 {
		return ExitUsage, flag + ": the agent offers no model choice (no config option of category \"model\", no session models)"
	}
	id, msg := settingChoice(flag, "model", want, modelChoices(st.models))
	if msg != "" {
		return ExitUsage, msg
	}
	callCtx, done := d.callCtx(ctx, d.cfg.InitTimeout)
	defer done()
	if err := d.conn.SetSessionModel(callCtx, &acp.SetSessionModelRequest{SessionID: st.sid, ModelID: id}); err != nil {
		return d.callFailed(callCtx, acp.MethodSessionSetModel, err)
	}
	v.setModels(d.conn.SessionModels(st.sid))
	return ExitOK, ""
}

// setOption sends session/set_config_option and keeps the options the
// agent answers with.
func (d *driver) setOption(ctx context.Context, v *sessionView, o *acp.SessionConfigOption, flag, want string) (int, string) {
	val, msg := configValue(o, flag, want)
	if val == nil {
		return ExitUsage, msg
	}
	sid := v.snapshot().sid
	callCtx, done := d.callCtx(ctx, d.cfg.InitTimeout)
	defer done()
	resp, err := d.conn.SetSessionConfigOption(callCtx, &acp.SetSessionConfigOptionRequest{SessionID: sid, ConfigID: o.ID, Value: val})
	if err != nil {
		return d.callFailed(callCtx, "session/set_config_option", err)
	}
	v.setOptions(resp.ConfigOptions)
	return ExitOK, ""
}

// confinedMode is the mode of the agent's profile (ConfinedModes) that
// turns its own sandbox off, when acpterm confines the agent and the agent
// offers one: the first of them it offers, as a mode or as a value of its
// config option of category mode; "" when there is none to switch to. It
// is applied only where --mode names no mode: a mode the user chose is
// theirs, and a turn whose commands all fail in acpterm's sandbox then
// says so (ExitConfined).
func (d *driver) confinedMode(st sessionState) string {
	p := d.cfg.AgentProfile
	if p == nil || len(p.ConfinedModes) == 0 || !d.agentConfined() {
		return ""
	}
	var offered []choice
	if st.modes != nil && len(st.modes.AvailableModes) > 0 {
		offered = modeChoices(st.modes)
	} else if o := findOptionByCategory(st.options, acp.SessionConfigOptionCategoryMode); o != nil {
		offered = valueChoices(o)
	}
	for _, want := range p.ConfinedModes {
		for _, c := range offered {
			if c.ID == want {
				return want
			}
		}
	}
	return ""
}
