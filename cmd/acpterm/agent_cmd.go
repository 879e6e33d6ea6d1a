package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/shellagent"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

const agentUsage = `usage: acpterm agent [flags]

Serves acpterm's built-in ACP agent on stdin and stdout. It has no model:
each non-empty line of a prompt is a shell command, run in order (one tool
call per command, shown live), and the turn ends with a message summing up
how each command exited. It stops at the first failing command unless
--keep-going.

Where the commands run (--exec):
  client  in the client's terminals (terminal/create); a client without
          terminals gets a message instead
  local   in the agent itself, confined by --sandbox and --network, and
          streamed to the client as a display terminal: the ACP v2 draft's
          terminal_update / terminal_output_chunk when the client sets
          clientCapabilities._meta.terminal_update, else Zed's
          _meta.terminal_output form when it sets that; in every case the
          output's tail and exit status end up as text in the tool call
  auto    client when the client advertised terminals, else local

To use it from Zed, add it as a custom agent in Zed's settings.json:

  {
    "agent_servers": {
      "acpterm": {
        "type": "custom",
        "command": "acpterm",
        "args": ["agent"]
      }
    }
  }

and from acpterm itself: acpterm run -p 'make test' -- acpterm agent
`

type agentFlags struct {
	fs          *flag.FlagSet
	timeout     time.Duration
	outputLimit uint64
	keepGoing   bool
	exec        string
	sandbox     sandboxFlags
}

func newAgentFlags(out io.Writer) *agentFlags {
	f := &agentFlags{fs: flag.NewFlagSet("acpterm agent", flag.ContinueOnError)}
	f.fs.SetOutput(out)
	f.fs.DurationVar(&f.timeout, "timeout", 0, "kill each command that runs longer than this `DURATION` (default: none)")
	f.fs.Var(sizeFlag{&f.outputLimit}, "output-limit", "the outputByteLimit asked for each command, `SIZE` in bytes or\nwith a unit: 4KiB, 1MiB (default: the client's)")
	f.fs.BoolVar(&f.keepGoing, "keep-going", false, "run every line even after a command failed")
	f.fs.StringVar(&f.exec, "exec", string(shellagent.ExecAuto), "where commands run, `WHERE`: client (its terminals), local (the agent\nitself, sandboxed) or auto (client if it has terminals, else local)")
	f.sandbox.mode, f.sandbox.network = "workspace-write", "allow"
	f.fs.StringVar(&f.sandbox.mode, "sandbox", f.sandbox.mode, "confine the commands run locally: `MODE` off, read-only or\nworkspace-write (also the session's cwd and the build caches)")
	f.fs.StringVar(&f.sandbox.network, "network", f.sandbox.network, "the network of commands run locally, `NET`: allow, or deny")
	f.fs.Var(listFlag{&f.sandbox.writable}, "writable", "also let locally run commands write `PATH`; repeatable")
	f.fs.BoolVar(&f.sandbox.gitRW, "writable-git", false, "leave the .git of writable directories writable")
	f.fs.BoolVar(&f.sandbox.cfgRW, "writable-config", false, "leave the files editors and agents run things from writable")
	f.fs.Usage = usageText(f.fs, agentUsage)
	return f
}

func agentCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newAgentFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm agent: unexpected arguments %q\n(see acpterm help agent)\n", f.fs.Args())
		return client.ExitUsage
	}
	if f.timeout < 0 {
		fmt.Fprintf(stderr, "acpterm agent: --timeout must not be negative, not %v\n(see acpterm help agent)\n", f.timeout)
		return client.ExitUsage
	}
	exec, err := shellagent.ParseExec(f.exec)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm agent: --%v\n", err)
		return client.ExitUsage
	}
	opts := &shellagent.Options{
		Timeout:     f.timeout,
		OutputLimit: f.outputLimit,
		KeepGoing:   f.keepGoing,
		Version:     client.Version(),
		Exec:        exec,
	}
	if exec != shellagent.ExecClient {
		sp, err := f.sandbox.policy()
		if err != nil {
			fmt.Fprintf(stderr, "acpterm agent: %v\n", err)
			return client.ExitUsage
		}
		opts.Local = &terminal.Options{Policy: &terminal.Policy{Sandbox: sp}}
		// With --exec local the check comes first and a sandbox that
		// cannot be had ends the agent; with auto it waits for the first
		// command run here, since most clients have terminals and the
		// check costs a start of the sandbox's helper.
		if exec == shellagent.ExecLocal {
			if !checkLocalSandbox(sp, stderr) {
				return client.ExitFailure
			}
		} else {
			opts.BeforeLocal = func() { checkLocalSandbox(sp, stderr) }
		}
	}
	hintIfTerminal(stdin, stderr, "agent", "acpterm demo, or acpterm run -p 'ls' -- acpterm agent")
	err = shellagent.Serve(ctx, stdin, stdout, opts)
	// Stopped through ctx is how the command is told to end, not a failure.
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "acpterm agent: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// checkLocalSandbox plans the sandbox of the commands the agent runs
// itself and says on stderr what it lacks, or that it cannot be set up
// (false).
func checkLocalSandbox(sp *sandbox.Policy, stderr io.Writer) bool {
	// Only a plan: Wrap starts nothing. The terminal runtime gives a
	// policy without Writable paths those of each command's cwd and
	// caches of their own (sandbox.DefaultCacheDir); the plan here takes
	// the cwd alone, since the caches change nothing in what is missing.
	check := *sp
	if wd, err := os.Getwd(); err == nil && len(check.Writable) == 0 && check.Mode == sandbox.WorkspaceWrite {
		check.Writable = []string{wd}
	}
	a, err := check.Wrap(&osexec.Cmd{Path: "/bin/true"})
	if err != nil {
		fmt.Fprintf(stderr, "acpterm agent: the sandbox cannot be set up: %v\n(see acpterm sandbox; --sandbox off runs commands unconfined)\n", err)
		return false
	}
	if len(a.Missing) > 0 {
		fmt.Fprintf(stderr, "acpterm agent: sandbox: %s; missing: %s\n", check.Mode, textsafe.Line(strings.Join(a.Missing, "; ")))
	}
	_ = a.Cleanup()
	return true
}

// policy is the sandbox of the commands the agent runs itself. Without
// --writable, a workspace-write command may write its cwd and caches of
// its own (terminal.Policy.Sandbox); --writable adds to those of the
// agent's working directory.
func (f *sandboxFlags) policy() (*sandbox.Policy, error) {
	var cfg client.Config
	if err := f.apply(&cfg); err != nil {
		return nil, err
	}
	// As acpterm run: on Landlock alone where no user namespace can be
	// had, saying what is missing.
	sp := &sandbox.Policy{Mode: cfg.Sandbox, Network: cfg.Network, WritableGit: cfg.WritableGit, WritableConfig: cfg.WritableConfig, WithoutMountNamespace: true}
	if len(cfg.Writable) > 0 && cfg.Sandbox == sandbox.WorkspaceWrite {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		sp.Writable, sp.CacheDir = append([]string{wd}, cfg.Writable...), sandbox.DefaultCacheDir()
		sp.Protected = sandbox.DefaultProtected(wd)
	}
	return sp, nil
}

// hintIfTerminal tells a person who started an agent-side command by hand
// at a terminal what it is waiting for: an ACP client on stdin, not them.
func hintIfTerminal(stdin io.Reader, stderr io.Writer, cmd, try string) {
	if f, ok := stdin.(*os.File); ok && client.IsTerminal(f) {
		fmt.Fprintf(stderr, "acpterm %s: serving ACP (JSON-RPC) on stdin and stdout for an ACP client; Ctrl-D quits.\n"+
			"To watch it work instead: %s\n", cmd, try)
	}
}
