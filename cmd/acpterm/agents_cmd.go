package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/acpterm/acpterm/internal/agents"
	"github.com/acpterm/acpterm/internal/client"
)

// resolveNamed turns `NAME [ARGS...]` into the named agent's command line
// with ARGS after it, when NAME is a known agent; anything else is
// returned as it is, a command of its own.
func resolveNamed(words []string) ([]string, error) {
	reg, err := agents.Load("")
	if err != nil {
		return nil, err
	}
	a, ok := reg.Lookup(words[0])
	if !ok {
		return words, nil
	}
	cmd, _, err := reg.Resolve(a)
	if err != nil {
		return nil, err
	}
	return append(cmd, words[1:]...), nil
}

func newAgentsFlags(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agents", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprint(w, `usage: acpterm agents

Lists the agents "acpterm run NAME" knows, how each would be started here
(installed: its program is on PATH; via npx: npx fetches its npm package;
not installed) and the command line. Add or replace agents in the config
file it names, as {"NAME": {"command": ["PROGRAM", "ARG", ...]}}.
"acpterm run [flags] -- COMMAND [ARGS...]" runs any command as the agent.
`)
	}
	return fs
}

func agentsCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newAgentsFlags(stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm agents: unexpected argument %q\n", fs.Arg(0))
		return client.ExitUsage
	}
	reg, err := agents.Load("")
	if err != nil {
		fmt.Fprintf(stderr, "acpterm agents: %v\n", err)
		return client.ExitUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tCOMMAND")
	for _, name := range reg.Names() {
		a, _ := reg.Lookup(name)
		cmd, how, _ := reg.Resolve(a)
		if cmd == nil {
			cmd = a.Command
		}
		status := how.String()
		if a.FromConfig {
			status += " (config)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, status, strings.Join(cmd, " "))
	}
	_ = tw.Flush()
	if p, err := agents.ConfigPath(); err == nil {
		fmt.Fprintf(stdout, "\nconfig file: %s\n", p)
	}
	return client.ExitOK
}
