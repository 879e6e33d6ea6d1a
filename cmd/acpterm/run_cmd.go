package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/terminal"
)

// maxPromptBytes bounds a prompt read from stdin.
const maxPromptBytes = 16 << 20

// runUsage is run's help; the exit statuses come from client.ExitMeanings.
var runUsage = fmt.Sprintf(`usage: acpterm run [flags] -- AGENT [ARGS...]
       acpterm run [flags] NAME [ARGS...]     (a named agent: acpterm agents)

Runs a prompt, or an interactive session, with an ACP agent: starts AGENT
(in its own process group, its stderr to ours), initializes it with
terminal and fs support, opens a session in --cwd (or continues one), sends
the prompt and shows the turn. Commands the agent runs in acpterm's
terminals are shown under their tool call; on a TTY their last lines are
shown live. At the end the session's terminals are released and the agent
is shut down.

The prompt is --prompt TEXT, else stdin when it is not a terminal.

Interactive session: without --prompt, with stdin a terminal, acpterm opens
a session of many turns: each line typed at the "› " prompt is one turn in
the same ACP session (line editing, and history with up and down). Ctrl-C
during a turn cancels it, a second one ends the session; Ctrl-D, /exit, or
Ctrl-C at an empty line end it (exit status 0). In-session commands: /help
(acpterm's commands and the agent's slash commands), /mode [ID] and
/model [ID] (show the current one and the choices, or switch), /exit. A
line naming one of the agent's slash commands is sent to it as it is.

Sessions are remembered per agent and directory in the state directory
($XDG_STATE_HOME/acpterm, else ~/.local/state/acpterm; "acpterm sessions"
lists them). --resume continues the last one of this agent in --cwd,
--session ID a given one: with session/load when the agent offers it (its
replay of the history is shown, marked as such), else session/resume. It
works with --prompt (one more turn) and interactively.

Permissions (the agent's session/request_permission and each command it
wants to run): --approve-all allows, --deny-all denies, otherwise acpterm
asks y/n/a on the terminal ("a" allows everything for the rest of the run);
without a terminal to ask on it denies and says so on stderr.

fs/read_text_file and fs/write_text_file take absolute paths inside a
--root (symlinks resolved); writes create missing files but not missing
directories; one read returns at most 64 MiB.

Ctrl-C (or SIGTERM) cancels the turn (session/cancel); a second one kills
the agent and its commands. Either way the exit status is 130.
--turn-timeout cancels a turn that runs longer the same way. An agent that
has not ended a cancelled turn --cancel-grace later (10s) is killed; after
--turn-timeout the exit status is then 124.

Modes, models, options: --mode ID (session/set_mode, or the agent's config
option of category mode), --model ID (its config option of category model,
else session/set_model for gemini's models) and --set ID=VALUE (any config
option) are applied after session/new and before the prompt. A value the
agent does not offer is a usage error that lists the ones it does. The
text output shows the mode and model in a dim line at the start and when
they change, the agent's slash commands once, and its last usage report
(context tokens, cost) at the end; on a TTY a "waiting for AGENT" line
appears while the agent has been silent for 2s.

%s
With --format json, stdout carries one JSON object per line (events
session, session_update, terminal_created, terminal_output, terminal_exit,
permission, then stop or error) and nothing else.

Authentication: when session/new answers -32000 (authentication
required), acpterm calls authenticate once and tries again, with the
agent's env_var method whose variables are all set in the environment
(when exactly one is, e.g. codex-acp's OPENAI_API_KEY), else the method
chosen from a numbered list on the terminal. --auth METHOD authenticates
with METHOD up front instead. Terminal logins are run by "acpterm login".
When the agent still needs authentication, acpterm lists its methods and
the command that sets each up.

Commands an agent runs itself and streams for display (Zed's
_meta.terminal_output extension, which acpterm advertises) are shown like
acpterm's own terminals; in JSON their terminal_created has "display":true.

Sandbox: by default the agent's commands run in workspace-write: they read
anywhere but write only in the roots, the build caches (Go, npm, pip,
cargo, ~/.cache), a private TMPDIR and the --writable paths; the .git of
each writable directory stays read-only, and /tmp is not writable (TMPDIR
is). A denied write fails with the program's own "Permission denied"; the
tool call's terminal says "sandbox: MODE". --sandbox off turns it off;
--network deny also cuts the network, loopback included. An agent with a
profile (acpterm agents: the named agents, their programs by name, an
agents.json entry with "writable" paths) is itself confined too, with
everything it runs: it may also write its own state (its profile's paths,
created if missing) and gets a private TMPDIR; --sandbox-agent=false
leaves it unconfined, --sandbox-agent confines an agent without one. A dim
line on stderr at the start says what is confined. An agent started
through npx starts in acpterm's state directory, not the workspace, so
that npx never runs a package planted in the workspace's node_modules.
"acpterm sandbox" shows what this machine enforces; the sandbox needs
Linux (elsewhere use --sandbox off).
`, client.ExitSummary())

type runFlags struct {
	fs           *flag.FlagSet
	prompt       string
	promptSet    bool
	cwd          string
	roots        []string
	format       string
	noColor      bool
	approveAll   bool
	denyAll      bool
	outputLimit  uint64
	maxTerminals int
	killGrace    time.Duration
	timeout      time.Duration
	shell        string
	initTimeout  time.Duration
	auth         string
	mode         string
	model        string
	settings     []string
	turnTimeout  time.Duration
	cancelGrace  time.Duration
	resume       bool
	session      string
	sandbox      sandboxFlags
	agentStderr  string
}

func newRunFlags(out io.Writer) *runFlags {
	f := &runFlags{
		fs:           flag.NewFlagSet("acpterm run", flag.ContinueOnError),
		format:       "text",
		outputLimit:  terminal.DefaultOutputCeiling,
		maxTerminals: terminal.DefaultMaxTerminalsPerSession,
		cancelGrace:  client.DefaultCancelGrace,
		killGrace:    terminal.DefaultKillGrace,
		initTimeout:  client.DefaultInitTimeout,
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
	fs.Var(sizeFlag{&f.outputLimit}, "output-limit", "host ceiling on each terminal's output buffer, `SIZE` in bytes\nor with a unit: 64KiB, 16MiB (K/M/G are 1024-based, KB/MB/GB 1000-based)")
	fs.IntVar(&f.maxTerminals, "max-terminals", f.maxTerminals, "at most `N` live terminals for the agent at once")
	fs.DurationVar(&f.killGrace, "kill-grace", f.killGrace, "wait `DURATION` between SIGTERM and SIGKILL when a command is killed")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill any command that runs longer than this `DURATION` (default: none)")
	fs.StringVar(&f.shell, "shell", "", "the shell `PATH` that runs commands sent as one line\n(default: $SHELL when it is a POSIX shell, else /bin/sh)")
	fs.DurationVar(&f.initTimeout, "init-timeout", f.initTimeout, "give the agent `DURATION` to answer initialize and session/new")
	fs.StringVar(&f.auth, "auth", "", "authenticate with the agent's auth `METHOD` (its ID) before session/new\n(default: only when the agent asks; see Authentication below)")
	fs.StringVar(&f.mode, "mode", "", "switch the session to the agent's mode `ID` before the prompt")
	fs.StringVar(&f.model, "model", "", "switch the session to model `ID` (the agent's config option of category model,\nor session/set_model for an agent that offers models that way)")
	fs.Var(listFlag{&f.settings}, "set", "set the agent's session config option: `ID=VALUE`; repeatable")
	fs.BoolVar(&f.resume, "resume", false, "continue the last session of this agent in --cwd (see acpterm sessions)")
	fs.StringVar(&f.session, "session", "", "continue the session `ID` (see acpterm sessions)")
	fs.DurationVar(&f.turnTimeout, "turn-timeout", 0, "cancel the turn after `DURATION`, then kill the agent (exit status 124;\ndefault: none)")
	fs.DurationVar(&f.cancelGrace, "cancel-grace", f.cancelGrace, "give the agent `DURATION` to end a cancelled turn before killing it")
	fs.StringVar(&f.agentStderr, "agent-stderr", "", "the agent's stderr: `show|hide|FILE` (default: on a terminal, shown dimmed at\nthe turn's end, a count when it is more than 3 lines and the turn succeeded,\nthe last 20 lines when it failed; elsewhere copied as it comes)")
	f.sandbox.add(fs)
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
func (f *runFlags) output(stdout io.Writer) (client.Format, client.TextOptions, error) {
	var format client.Format
	switch f.format {
	case "text":
		format = client.FormatText
	case "json":
		format = client.FormatJSON
	default:
		return 0, client.TextOptions{}, fmt.Errorf("--format must be text or json, not %q", f.format)
	}
	var text client.TextOptions
	if out, ok := stdout.(*os.File); ok && format == client.FormatText && client.IsTerminal(out) {
		text.Live = true
		text.Size = func() (int, int) { return client.TerminalSize(out) }
		text.Color = client.ColorEnabled(true, f.noColor, os.Getenv)
	}
	return format, text, nil
}

func runCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newRunFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "prompt" || fl.Name == "p" {
			f.promptSet = true
		}
	})
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "acpterm run: "+format+"\n(see acpterm help run)\n", a...)
		return client.ExitUsage
	}
	agent := f.fs.Args()
	if len(agent) == 0 {
		return usage("no agent given: acpterm run [flags] NAME, or acpterm run [flags] -- AGENT [ARGS...]")
	}
	// Without "--", a known name (acpterm agents) starts that agent;
	// after "--", the words are always the command itself.
	agentName := ""
	if at := len(args) - len(agent); at == 0 || args[at-1] != "--" {
		resolved, err := resolveNamed(agent)
		if err != nil {
			return usage("%v", err)
		}
		if !slices.Equal(resolved, agent) {
			agentName = agent[0]
		}
		agent = resolved
	}
	if f.resume && f.session != "" {
		return usage("--resume and --session exclude each other")
	}
	if f.approveAll && f.denyAll {
		return usage("--approve-all and --deny-all exclude each other")
	}
	format, text, err := f.output(stdout)
	if err != nil {
		return usage("%v", err)
	}
	if f.turnTimeout < 0 {
		return usage("--turn-timeout must not be negative")
	}
	if f.cancelGrace <= 0 {
		return usage("--cancel-grace must be positive")
	}
	// The library reads 0 (or less) as "the default" or "no limit": a
	// value given on the command line means what it says, or is refused.
	switch {
	case f.maxTerminals < 1:
		return usage("--max-terminals must be at least 1, not %d", f.maxTerminals)
	case f.killGrace <= 0:
		return usage("--kill-grace must be positive, not %v", f.killGrace)
	case f.timeout < 0:
		return usage("--timeout must not be negative, not %v", f.timeout)
	case f.initTimeout <= 0:
		return usage("--init-timeout must be positive, not %v", f.initTimeout)
	case f.outputLimit == 0:
		return usage("--output-limit must be positive")
	}
	stderrMode := client.AgentStderrAuto
	var stderrFile *os.File
	given := false
	f.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "agent-stderr" })
	if given {
		mode, path, err := client.ParseAgentStderr(f.agentStderr)
		if err != nil {
			return usage("%v", err)
		}
		stderrMode = mode
		if path != "" {
			stderrFile, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return usage("--agent-stderr: %v", err)
			}
			defer stderrFile.Close()
		}
	}
	var settings []client.SessionSetting
	for _, s := range f.settings {
		id, value, ok := strings.Cut(s, "=")
		if !ok || id == "" {
			return usage("--set %q: want ID=VALUE", s)
		}
		settings = append(settings, client.SessionSetting{ID: id, Value: value})
	}
	approval := client.ApprovalAsk
	switch {
	case f.approveAll:
		approval = client.ApprovalAll
	case f.denyAll:
		approval = client.ApprovalNone
	}
	cfg := &client.Config{
		Agent:        agent,
		Cwd:          f.cwd,
		Roots:        f.roots,
		ResumeLast:   f.resume,
		ResumeID:     f.session,
		AgentName:    agentName,
		Format:       format,
		Approval:     approval,
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
		Settings:     settings,
		TurnTimeout:  f.turnTimeout,
		CancelGrace:  f.cancelGrace,
		AgentStderr:  stderrMode,
		Stdout:       stdout,
		Stderr:       stderr,
	}
	if stderrFile != nil {
		cfg.AgentStderrTo = stderrFile
	}
	if err := f.sandbox.apply(cfg); err != nil {
		return usage("%v", err)
	}
	// The prompt last: every flag is checked before stdin is read, which
	// may wait on a pipe.
	prompt := f.prompt
	interactive := false
	if !f.promptSet {
		in, isFile := stdin.(*os.File)
		switch {
		case stdin == nil:
			return usage("no prompt: pass --prompt TEXT or pipe it on stdin")
		case isFile && client.IsTerminal(in):
			interactive = true
		}
	}
	if !f.promptSet && !interactive {
		b, err := io.ReadAll(io.LimitReader(stdin, maxPromptBytes+1))
		if err != nil {
			return usage("reading the prompt from stdin: %v", err)
		}
		if len(b) > maxPromptBytes {
			return usage("the prompt on stdin is larger than %d MiB", maxPromptBytes>>20)
		}
		prompt = string(b)
	}
	cfg.Prompt, cfg.Interactive = prompt, interactive
	if store, err := sessionstore.Open(); err == nil {
		cfg.Store = store
	} else if f.resume {
		return usage("--resume: no state directory to find sessions in: %v", err)
	}
	// Also with --approve-all or --deny-all: the terminal is where an
	// authentication method is chosen when the agent asks for one.
	closeTTY := askOnTTY(cfg, stdin, stderr)
	defer closeTTY()
	if interactive && cfg.TTYIn == nil {
		return usage("no prompt, and the terminal cannot be opened for an interactive session: pass --prompt TEXT")
	}
	return runClient(ctx, cfg)
}

// askOnTTY finds where to ask questions (permissions, an authentication
// method): the controlling terminal, when stdin or stderr is one (a prompt
// piped on stdin still lets the user answer). It returns the function that
// closes it.
func askOnTTY(cfg *client.Config, stdin io.Reader, stderr io.Writer) func() {
	in, _ := stdin.(*os.File)
	errf, _ := stderr.(*os.File)
	stdinTTY := in != nil && client.IsTerminal(in)
	if !stdinTTY && (errf == nil || !client.IsTerminal(errf)) {
		return func() {}
	}
	if tty, err := client.OpenTTY(); err == nil {
		cfg.TTYIn, cfg.TTYOut = tty, tty
		return func() { tty.Close() }
	}
	if stdinTTY {
		// A blocking stdin cannot be interrupted; hiding its Close keeps
		// the prompter from waiting for a read that may never end.
		cfg.TTYIn, cfg.TTYOut = struct{ io.Reader }{in}, stderr
	}
	return func() {}
}

// runClient runs the client with SIGINT and SIGTERM turned into cancels
// (signals.go).
func runClient(ctx context.Context, cfg *client.Config) int {
	return runWithSignals(ctx, cfg, client.Run)
}
