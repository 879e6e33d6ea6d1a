package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
)

// The flags of acpterm run, and how they become the client's config: each
// step checks what it reads, in the order the usage errors come.

type runFlags struct {
	fs         *flag.FlagSet
	prompt     string
	promptSet  bool
	cwd        string
	roots      []string
	format     string
	noColor    bool
	approveAll bool
	denyAll    bool
	terminalFlags
	initTimeout time.Duration
	auth        string
	mode        string
	model       string
	settings    []string
	turnTimeout time.Duration
	cancelGrace time.Duration
	resume      bool
	session     string
	sandbox     sandboxFlags
	agentStderr string
	protocol    string
	offerMCP    bool
	pty         bool
	remote      remoteFlags
}

func newRunFlags(out io.Writer) *runFlags {
	f := &runFlags{
		fs:          flag.NewFlagSet("acpterm run", flag.ContinueOnError),
		format:      "text",
		protocol:    client.DefaultProtocol.String(),
		cancelGrace: client.DefaultCancelGrace,
		initTimeout: client.DefaultInitTimeout,
	}
	fs := f.fs
	fs.SetOutput(out)
	fs.StringVar(&f.prompt, "prompt", "", "the prompt `TEXT` (default: read stdin when it is not a terminal)")
	fs.StringVar(&f.prompt, "p", "", "-alias of --prompt")
	f.addCommon(fs)
	fs.StringVar(&f.cwd, "cwd", "", "the session's working `DIR` (default: the current directory)")
	fs.Var(listFlag{&f.roots}, "root", "a workspace root `DIR` confining fs/* paths and terminal cwds;\nrepeatable (default: the --cwd)")
	fs.BoolVar(&f.approveAll, "approve-all", false, "allow every permission request and command")
	fs.BoolVar(&f.denyAll, "deny-all", false, "deny every permission request and command")
	f.terminalFlags.add(fs)
	fs.DurationVar(&f.initTimeout, "init-timeout", f.initTimeout, "give the agent `DURATION` to answer initialize and session/new;\nwith --remote, also each of: finding or copying acpterm there, the exec server's start")
	fs.StringVar(&f.auth, "auth", "", "authenticate with the agent's auth `METHOD` (its ID) before session/new\n(default: only when the agent asks; see Authentication below)")
	fs.StringVar(&f.mode, "mode", "", "switch the session to the agent's mode `ID` before the prompt")
	fs.StringVar(&f.model, "model", "", "switch the session to model `ID` (the agent's config option of category model,\nor session/set_model for an agent that offers models that way)")
	fs.Var(listFlag{&f.settings}, "set", "set the agent's session config option: `ID=VALUE`; repeatable")
	fs.BoolVar(&f.resume, "resume", false, "continue the last session of this agent in --cwd (see acpterm sessions)")
	fs.StringVar(&f.session, "session", "", "continue the session `ID` (see acpterm sessions)")
	fs.DurationVar(&f.turnTimeout, "turn-timeout", 0, "cancel the turn after `DURATION`, then kill the agent (exit status 124;\ndefault: none)")
	fs.DurationVar(&f.cancelGrace, "cancel-grace", f.cancelGrace, "give the agent `DURATION` to end a cancelled turn before killing it")
	fs.StringVar(&f.agentStderr, "agent-stderr", "", "the agent's stderr: `show|hide|FILE` (default: on a terminal, shown dimmed at\nthe turn's end, a count when it is more than 3 lines and the turn succeeded,\nthe last 20 lines when it failed; elsewhere copied as it comes)")
	fs.StringVar(&f.protocol, "protocol", f.protocol, "the ACP `VERSION` to speak: auto (offer 2, accept 1: an agent that runs its commands\nin acpterm's terminals answers 1), 1 (offer only 1; acpterm runs the agent's terminals),\nor 2 (require 2; the agent runs its commands itself)")
	fs.BoolVar(&f.pty, "pty", false, "run every command the agent asks acpterm for on a pseudo-terminal (80x24; Linux),\nfor programs that need one; the agent reads the rendered text (with --remote, on the\ntarget, a Linux one)")
	fs.BoolVar(&f.offerMCP, "mcp", false, "offer the agent acpterm's execution MCP server (exec_command, write_stdin) in\nsession/new, so that its commands run as acpterm's terminals (with --remote, on the\ntarget; not with --remote-agent)")
	f.sandbox.add(fs)
	f.remote.add(fs)
	fs.Usage = usageText(fs, runUsage)
	return f
}

// addCommon adds the output flags that run and demo share.
func (f *runFlags) addCommon(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", "text", "output `FORMAT`: text (for people) or json (one event per line)")
	fs.BoolVar(&f.noColor, "no-color", false, "no colours (also when NO_COLOR is set)")
}

// output is how stdout is written to: the format and, for text, the TTY
// features.
func (f *runFlags) output(stdout io.Writer) (client.Format, render.TextOptions, error) {
	var format client.Format
	switch f.format {
	case "text":
		format = client.FormatText
	case "json":
		format = client.FormatJSON
	default:
		return 0, render.TextOptions{}, fmt.Errorf("--format must be text or json, not %q", f.format)
	}
	var text render.TextOptions
	if out, ok := stdout.(*os.File); ok && format == client.FormatText && client.IsTerminal(out) {
		text.Live = true
		text.Size = func() (int, int) { return client.TerminalSize(out) }
		text.Color = render.ColorEnabled(true, f.noColor, os.Getenv)
	}
	return format, text, nil
}

// given reports whether any of the named flags was set on the command
// line.
func (f *runFlags) given(names ...string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || slices.Contains(names, fl.Name) })
	return set
}

// config is the client's config for the agent's command line and its
// name (agentArgs), from the flags other than the prompt's. It returns
// the file that --agent-stderr opened, if any, for the caller to close
// after the run; an error is a usage error.
func (f *runFlags) config(agent []string, agentName string, stdout, stderr io.Writer) (*client.Config, *os.File, error) {
	if err := f.checkExclusive(); err != nil {
		return nil, nil, err
	}
	format, text, err := f.output(stdout)
	if err != nil {
		return nil, nil, err
	}
	protocol, err := client.ParseProtocol(f.protocol)
	if err != nil {
		return nil, nil, err
	}
	if err := f.checkLimits(); err != nil {
		return nil, nil, err
	}
	stderrMode, stderrFile, err := f.agentStderrTo()
	if err != nil {
		return nil, nil, err
	}
	cfg := &client.Config{
		Agent:        agent,
		Cwd:          f.cwd,
		Roots:        f.roots,
		ResumeLast:   f.resume,
		ResumeID:     f.session,
		AgentName:    agentName,
		Format:       format,
		Approval:     f.approval(),
		Text:         text,
		OutputLimit:  f.outputLimit,
		MaxTerminals: f.maxTerminals,
		KillGrace:    f.killGrace,
		Timeout:      f.timeout,
		Shell:        f.shell,
		InitTimeout:  f.initTimeout,
		Auth:         f.auth,
		Mode:         f.mode,
		Model:        f.model,
		TurnTimeout:  f.turnTimeout,
		CancelGrace:  f.cancelGrace,
		Protocol:     protocol,
		AgentStderr:  stderrMode,
		Stdout:       stdout,
		Stderr:       stderr,
	}
	cfg.OfferMCP = f.offerMCP
	cfg.PTY = f.pty
	if stderrFile != nil {
		cfg.AgentStderrTo = stderrFile
	}
	if cfg.Settings, err = f.sessionSettings(); err == nil {
		err = f.applyRemote(cfg)
	}
	if err == nil {
		err = f.sandbox.apply(cfg)
	}
	if err != nil {
		if stderrFile != nil {
			_ = stderrFile.Close()
		}
		return nil, nil, err
	}
	return cfg, stderrFile, nil
}

// checkExclusive refuses flags that exclude each other.
func (f *runFlags) checkExclusive() error {
	if f.resume && f.session != "" {
		return errors.New("--resume and --session exclude each other")
	}
	if f.approveAll && f.denyAll {
		return errors.New("--approve-all and --deny-all exclude each other")
	}
	if f.pty && f.remote.target == "" && runtime.GOOS != "linux" {
		// With --remote the target's OS decides (its exec server's hello).
		return fmt.Errorf("--pty: pseudo-terminals are for Linux only so far, not %s", runtime.GOOS)
	}
	if f.offerMCP && f.remote.agent {
		return errors.New("--mcp and --remote-agent exclude each other: the agent on the target could not reach the MCP server's relay here")
	}
	return nil
}

// checkLimits refuses durations and limits out of range.
func (f *runFlags) checkLimits() error {
	if f.turnTimeout < 0 {
		return errors.New("--turn-timeout must not be negative")
	}
	if f.cancelGrace <= 0 {
		return errors.New("--cancel-grace must be positive")
	}
	if f.initTimeout <= 0 {
		return fmt.Errorf("--init-timeout must be positive, not %v", f.initTimeout)
	}
	return f.terminalFlags.check()
}

// agentStderrTo is what --agent-stderr asks for, and the file it names,
// opened for appending (nil for show, hide and the default).
func (f *runFlags) agentStderrTo() (client.AgentStderr, *os.File, error) {
	if !f.given("agent-stderr") {
		return client.AgentStderrAuto, nil, nil
	}
	mode, path, err := client.ParseAgentStderr(f.agentStderr)
	if err != nil || path == "" {
		return mode, nil, err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return mode, nil, fmt.Errorf("--agent-stderr: %v", err)
	}
	return mode, file, nil
}

// sessionSettings are the --set options, each ID=VALUE.
func (f *runFlags) sessionSettings() ([]client.SessionSetting, error) {
	var settings []client.SessionSetting
	for _, s := range f.settings {
		id, value, ok := strings.Cut(s, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--set %q: want ID=VALUE", s)
		}
		settings = append(settings, client.SessionSetting{ID: id, Value: value})
	}
	return settings, nil
}

// approval is what is answered to the agent's permission requests.
func (f *runFlags) approval() permission.Approval {
	switch {
	case f.approveAll:
		return permission.ApprovalAll
	case f.denyAll:
		return permission.ApprovalNone
	}
	return permission.ApprovalAsk
}

// readPrompt sets the config's prompt: --prompt's text, else stdin's
// when stdin is not a terminal; with stdin a terminal the session is
// interactive. It runs after every other check: reading stdin may wait on
// a pipe.
func (f *runFlags) readPrompt(cfg *client.Config, stdin io.Reader) error {
	cfg.Prompt = f.prompt
	if f.promptSet {
		return nil
	}
	if stdin == nil {
		return errors.New("no prompt: pass --prompt TEXT or pipe it on stdin")
	}
	if in, ok := stdin.(*os.File); ok && client.IsTerminal(in) {
		cfg.Interactive = true
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxPromptBytes+1))
	if err != nil {
		return fmt.Errorf("reading the prompt from stdin: %v", err)
	}
	if len(b) > maxPromptBytes {
		return fmt.Errorf("the prompt on stdin is larger than %d MiB", maxPromptBytes>>20)
	}
	cfg.Prompt = string(b)
	return nil
}
