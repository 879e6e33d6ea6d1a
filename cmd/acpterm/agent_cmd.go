package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/acpterm/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/shellagent"
)

const agentUsage = `usage: acpterm agent [flags]

Serves acpterm's built-in ACP agent on stdin and stdout. It has no model:
each non-empty line of a prompt is a shell command, run in order through
the client's terminals (one tool call per command, its terminal embedded so
the client shows it live), and the turn ends with a message summing up how
each command exited. It stops at the first failing command unless
--keep-going. The client must support terminals.

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
}

func newAgentFlags(out io.Writer) *agentFlags {
	f := &agentFlags{fs: flag.NewFlagSet("acpterm agent", flag.ContinueOnError)}
	f.fs.SetOutput(out)
	f.fs.DurationVar(&f.timeout, "timeout", 0, "kill each command that runs longer than this `DURATION` (default: none)")
	f.fs.Var(sizeFlag{&f.outputLimit}, "output-limit", "the outputByteLimit asked for each command, `SIZE` in bytes or\nwith a unit: 4KiB, 1MiB (default: the client's)")
	f.fs.BoolVar(&f.keepGoing, "keep-going", false, "run every line even after a command failed")
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
	hintIfTerminal(stdin, stderr, "agent", "acpterm demo, or acpterm run -p 'ls' -- acpterm agent")
	err := shellagent.Serve(ctx, stdin, stdout, &shellagent.Options{
		Timeout:     f.timeout,
		OutputLimit: f.outputLimit,
		KeepGoing:   f.keepGoing,
		Version:     client.Version(),
	})
	// Stopped through ctx is how the command is told to end, not a failure.
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "acpterm agent: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// hintIfTerminal tells a person who started an agent-side command by hand
// at a terminal what it is waiting for: an ACP client on stdin, not them.
func hintIfTerminal(stdin io.Reader, stderr io.Writer, cmd, try string) {
	if f, ok := stdin.(*os.File); ok && client.IsTerminal(f) {
		fmt.Fprintf(stderr, "acpterm %s: serving ACP (JSON-RPC) on stdin and stdout for an ACP client; Ctrl-D quits.\n"+
			"To watch it work instead: %s\n", cmd, try)
	}
}
