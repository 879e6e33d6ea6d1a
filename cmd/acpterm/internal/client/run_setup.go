package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/confined"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/mcptie"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/terminal"
	"github.com/acpterm/acpterm/workspace"
)

// The steps of driver.run before the agent starts, in the order it takes
// them: the config completed and checked, the working directory and the
// workspace, then the renderers and the terminal manager with the
// goroutines that feed them.

// applyDefaults fills in the zero fields of the config that have a
// default.
func (d *driver) applyDefaults() {
	c := &d.cfg
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = DefaultCancelGrace
	}
}

// checkConfig refuses a config that cannot run: no agent, nothing to
// send, or two ways of continuing a session at once.
func (d *driver) checkConfig() error {
	c := &d.cfg
	if len(c.Agent) == 0 || c.Agent[0] == "" {
		return errors.New("no agent command given")
	}
	switch {
	case c.Interactive && (c.TTYIn == nil || c.TTYOut == nil):
		return errors.New("an interactive session needs a terminal")
	case !c.Interactive && strings.TrimSpace(c.Prompt) == "":
		return errors.New("the prompt is empty")
	case c.ResumeLast && c.ResumeID != "":
		return errors.New("--resume and --session exclude each other")
	case c.Remote != nil && (c.Cwd != "" || len(c.Roots) > 0):
		return errors.New("with --remote the target names the directory")
	}
	return nil
}

// workDir is the session's working directory: dir ("" for the current
// one) made absolute, which must be a directory.
func workDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot get the current directory: %v", err)
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--cwd: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--cwd %s is not a directory", dir)
	}
	return dir, nil
}

// warnFromStore gives the run its own copy of the session store, whose
// warnings go where the run's do.
func (d *driver) warnFromStore() {
	if d.cfg.Store == nil {
		return
	}
	st := *d.cfg.Store
	st.Warn = func(msg string) { d.warn("acpterm: " + msg) }
	d.cfg.Store = &st
}

// openWorkspace opens the roots (the cwd when none is given) for fs/*,
// and checks that the cwd is inside one of them.
func (d *driver) openWorkspace() (*workspace.Workspace, error) {
	c := &d.cfg
	roots := c.Roots
	if len(roots) == 0 {
		roots = []string{d.cwd}
	}
	// fs/write_text_file obeys the sandbox of the commands: the same mode
	// and .git rule as sandboxPolicy gives them.
	ws, err := workspace.NewWorkspace(roots, &workspace.WritePolicy{Mode: c.Sandbox, WritableGit: c.WritableGit, WritableConfig: c.WritableConfig})
	if err != nil {
		return nil, fmt.Errorf("--root: %v", err)
	}
	if real, err := filepath.EvalSymlinks(d.cwd); err != nil || !ws.Contains(real) {
		_ = ws.Close()
		return nil, fmt.Errorf("--cwd %s is outside every --root (%s)", d.cwd, strings.Join(ws.Roots(), ", "))
	}
	return ws, nil
}

// startRendering sets up the renderer's layers, the prompter when there
// is a terminal to ask on (the caller closes it), and the approver that
// asks there.
func (d *driver) startRendering() {
	c := &d.cfg
	d.sw = newSwitchRenderer(c)
	d.view = newSessionView(d.sw)
	d.end = &endGate{Renderer: d.view}
	d.jobs = newJobsLayer(d.end, d.stopTerminal)
	d.r = d.jobs
	var p *permission.Prompter
	if c.TTYIn != nil && c.TTYOut != nil {
		p = permission.NewPrompter(c.TTYIn, c.TTYOut, d.r.Suspend, d.promptInterrupt)
	}
	d.ask = p
	d.perm = permission.New(c.Approval, p, d.r.Permission, d.warn)
	d.rendering.Store(true)
}

// startTerminals makes what runs the agent's terminals (d.mgr): a
// terminal manager here, or with --remote the exec server on the target,
// and subscribes to their events. On failure the caller closes d.mgr.
func (d *driver) startTerminals(ws *workspace.Workspace) (terminal.Events, error) {
	if r := d.remote; r != nil {
		d.mgr = r.client
		r.log.set(d.warn)
		d.wg.Go(func() { r.watchLost(d.warn) })
		return d.mgr.Subscribe("", "")
	}
	c := &d.cfg
	// The bound is the agent's, not only its session's: the session ID of
	// a terminal/create is the agent's to write.
	maxTerms := c.MaxTerminals
	if maxTerms == 0 {
		maxTerms = terminal.DefaultMaxTerminalsPerSession
	}
	d.mgr = terminal.NewManager(&terminal.Options{
		Policy: &terminal.Policy{
			Decide:                 d.perm.DecideTerminal,
			MaxTerminalsPerSession: maxTerms,
			MaxTerminals:           maxTerms,
			OutputCeiling:          c.OutputLimit,
			Timeout:                c.Timeout,
			Roots:                  ws.Roots(),
			Sandbox:                d.sandbox,
		},
		Env:        d.commandEnv(),
		PTY:        ptyOption(c.PTY),
		Shell:      c.Shell,
		KillGrace:  c.KillGrace,
		DefaultCwd: d.cwd,
		Logf:       func(format string, args ...any) { d.warn("acpterm: terminal: " + fmt.Sprintf(format, args...)) },
	})
	return d.mgr.Subscribe("", "")
}

// startPumps starts the run's goroutines, which settle and shutdown
// join: the pump of terminal events to the renderer, the ticker and the
// signal watcher. It returns the display terminals the pump feeds.
func (d *driver) startPumps(sub terminal.Events) *render.DisplayTerminals {
	d.shown = newShownGate()
	d.watch = confined.NewWatch()
	d.ties = mcptie.New(func() acp.SessionID {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.sid
	}, d.r, d.shown.wait)
	disp := render.NewDisplayTerminals(watchedRenderer{d.r, d.watch})
	d.pumped = make(chan struct{})
	d.wg.Add(3)
	go func() {
		defer close(d.pumped)
		d.pumpEvents(sub, disp)
	}()
	go d.tick()
	go d.watchSignals()
	return disp
}

// watchedRenderer passes the display terminals' events (the commands an
// agent runs itself, with the output it reports of them) to the turn's
// watch as well as to the renderer, as the pump does with acpterm's own:
// codex-acp reports its commands' output only so.
type watchedRenderer struct {
	render.Renderer
	watch *confined.Watch
}

func (w watchedRenderer) TerminalEvent(ev terminal.Event) {
	w.watch.TerminalEvent(ev)
	w.Renderer.TerminalEvent(ev)
}

// ptyOption is terminal.Options.PTY for Config.PTY: the default size.
func ptyOption(on bool) *terminal.Size {
	if !on {
		return nil
	}
	return &terminal.Size{}
}

// capabilityMeta is clientCapabilities._meta: the display terminals an
// agent may stream to acpterm; where this run's terminals can be
// pseudo-terminals (here, on Linux, or on a --remote target that gives
// them), terminal.MetaPTY; and where the runtime takes input (here, or a
// target whose exec server does), terminal.MetaStdin (acp adds
// acp.MetaTerminalInput for the methods, which client serves).
func (d *driver) capabilityMeta() acp.Meta {
	meta := render.DisplayCapabilities()
	_, local := d.mgr.(*terminal.Manager)
	if local && runtime.GOOS == "linux" || d.remote != nil && d.remote.client.Hello().PTY {
		meta[terminal.MetaPTY] = json.RawMessage("true")
	}
	if _, in := d.mgr.(terminal.Input); in && (d.remote == nil || d.remote.client.Hello().Input) {
		meta[terminal.MetaStdin] = json.RawMessage("true")
	}
	return meta
}
