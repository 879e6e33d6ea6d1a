package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/login"
)

const loginUsage = `usage: acpterm login [--method ID] [--yes] [--allow-env NAME]... -- AGENT [ARGS...]
       acpterm login [FLAGS] NAME [ARGS...]   (a named agent: acpterm agents)

Logs in to an ACP agent, then checks that it opens sessions. AGENT [ARGS...]
is the agent's command line as given to acpterm run, or NAME a named agent.

acpterm starts the agent, sends initialize (offering terminal logins) to
learn its authentication methods, stops it, and picks a method: --method
ID, else the agent's only terminal login, else the one env_var method whose
variables are all set, else the one chosen from a numbered list on the
terminal. Without a terminal to ask on it lists the methods and stops.

A terminal login runs the agent's command line with the method's extra
arguments and environment (for the older _meta["terminal-auth"] form, the
command the agent names), attached to this terminal, and waits for it:
exit status 0 means logged in. What it prints is the agent's own, shown as
is. Any other method is passed to the agent's authenticate.

The command and its environment are the agent's choice, so acpterm shows
them first, each word quoted as a shell would read it: the command line,
whether it is a program the agent names rather than its own command line,
the directory and every variable it sets. It runs only after a "y" typed on
the terminal, or with --yes; without a terminal and without --yes it is not
run. Variables that make a program load or run code of the agent's choice
are refused: LD_* and DYLD_* (the dynamic loaders), BASH_ENV, ENV, ZDOTDIR,
BASH_FUNC_*, SHELLOPTS, BASHOPTS, PS4, PROMPT_COMMAND (shells), PATH,
GCONV_PATH, PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, NODE_OPTIONS, NODE_PATH,
PERL5OPT, PERL5LIB, PERLLIB, RUBYOPT, RUBYLIB, JAVA_TOOL_OPTIONS,
_JAVA_OPTIONS, JDK_JAVA_OPTIONS. --allow-env NAME lets one through.

Then acpterm starts the agent again and opens a session (session/new in
--cwd) to confirm the login.

The agent, and its terminal login, are started as acpterm run starts the
agent: one with a profile runs confined to its own state (its profile's
paths, acpterm agents) and its npm cache, with the network
(--sandbox-agent=false leaves it unconfined); npx starts outside --cwd
with an npm cache of acpterm's own.

Exit status: 0 logged in, 2 usage (an unknown method, none chosen, the
login command declined, refused or not asked about), 3 the agent failed or
still needs authentication, 130 interrupted.
`

type loginFlags struct {
	fs          *flag.FlagSet
	method      string
	cwd         string
	initTimeout time.Duration
	yes         bool
	allowEnv    []string
	confine     autoBool
}

func newLoginFlags(out io.Writer) *loginFlags {
	f := &loginFlags{fs: flag.NewFlagSet("acpterm login", flag.ContinueOnError), initTimeout: client.DefaultInitTimeout}
	fs := f.fs
	fs.SetOutput(out)
	fs.StringVar(&f.method, "method", "", "log in with the agent's auth method `ID` (default: its only terminal\nlogin, or ask)")
	fs.StringVar(&f.cwd, "cwd", "", "run the agent and open the check's session in `DIR` (default: the\ncurrent directory)")
	fs.DurationVar(&f.initTimeout, "init-timeout", f.initTimeout, "give the agent `DURATION` to answer initialize and session/new")
	fs.BoolVar(&f.yes, "yes", false, "run the agent's terminal login command without asking (it is shown\nall the same)")
	fs.Var(&f.confine, "sandbox-agent", sandboxAgentUsage)
	fs.Func("allow-env", "let the login command set `NAME` although it makes programs load or\nrun code (LD_PRELOAD, BASH_ENV, …); repeatable", func(name string) error {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("%q is not a variable name", name)
		}
		f.allowEnv = append(f.allowEnv, name)
		return nil
	})
	fs.Usage = usageText(fs, loginUsage)
	return f
}

func loginCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newLoginFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	if f.initTimeout <= 0 {
		fmt.Fprintf(stderr, "acpterm login: --init-timeout must be positive, not %v\n(see acpterm help login)\n", f.initTimeout)
		return client.ExitUsage
	}
	agent := f.fs.Args()
	if len(agent) == 0 {
		fmt.Fprintf(stderr, "acpterm login: no agent given: acpterm login [--method ID] NAME, or acpterm login [--method ID] -- AGENT [ARGS...]\n(see acpterm help login)\n")
		return client.ExitUsage
	}
	// As for run: without "--", a known name starts that agent.
	agent, name, err := agentArgs(args, agent)
	var prof *agents.Resolved
	confine := false
	if err == nil {
		prof, confine, err = agentConfinement(name, agent, f.confine)
	}
	if err != nil {
		fmt.Fprintf(stderr, "acpterm login: %v\n(see acpterm help login)\n", err)
		return client.ExitUsage
	}
	cfg := &client.LoginConfig{
		Config: login.Config{
			Agent:       agent,
			Method:      f.method,
			Cwd:         f.cwd,
			InitTimeout: f.initTimeout,
			Yes:         f.yes,
			AllowEnv:    f.allowEnv,
			Stdin:       stdin,
			Stdout:      stdout,
			Stderr:      stderr,
		},
		Profile: prof,
		Confine: confine,
	}
	// Where a method is chosen when there are several.
	var ttyCfg client.Config
	closeTTY := askOnTTY(&ttyCfg, stdin, stderr)
	defer closeTTY()
	if in, ok := ttyCfg.TTYIn.(*os.File); ok {
		cfg.TTYIn, cfg.TTYOut = in, ttyCfg.TTYOut
	}
	// Ctrl-C or SIGTERM ends the login; a Ctrl-C typed while the login
	// command has the terminal reaches that command too, which decides.
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	return client.Login(ctx, cfg)
}
