package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
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
not installed) and the command line. claude and codex are the adapters
@agentclientprotocol/claude-agent-acp and @agentclientprotocol/codex-acp
(which took over from the unmaintained @zed-industries packages of the
same programs). Add or replace agents in the config file it names, as
{"NAME": {"command": ["PROGRAM", "ARG", ...]}}; to pin another release of
a named agent, replace it with npx and a version, e.g.
{"codex": {"command": ["npx", "-y", "@agentclientprotocol/codex-acp@2.5.0"]}}
(an npx line of the agent's package, or of its former @zed-industries
one, keeps the agent's profile). "acpterm run [flags] -- COMMAND
[ARGS...]" runs any command as the agent.

Then each agent's profile: what it writes besides the workspace, which
"acpterm run" makes writable when it confines the agent as a whole
(--sandbox-agent, on by default for an agent with a profile): its state
and config under the home directory (the variables it reads, such as
CODEX_HOME or XDG_DATA_HOME, are followed), an npm cache of acpterm's own
for it when it starts through npx, and a private TMPDIR (with the other variables it reads for
one). A program of a built-in agent has its profile whatever the path it
is run by. A config entry may add paths of its own: "writable": ["~/.foo",
"/abs/path"] (a directory with everything below it, or one file; missing
directories are created 0700 before the agent starts).
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
	fmt.Fprintln(stdout, "\nPROFILES (what the agent writes when it is confined; --sandbox-agent)")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, name := range reg.Names() {
		a, _ := reg.Lookup(name)
		cmd, _, _ := reg.Resolve(a)
		if cmd == nil {
			cmd = a.Command
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, profileText(reg, a, cmd))
	}
	_ = tw.Flush()
	if p, err := agents.ConfigPath(); err == nil {
		fmt.Fprintf(stdout, "\nconfig file: %s\n", p)
	}
	return client.ExitOK
}

// profileText is the profile column of `acpterm agents` for a, started as
// cmd: its writable paths, or why it is not confined by default.
func profileText(reg *agents.Registry, a agents.Agent, cmd []string) string {
	prof, ok := reg.ProfileFor(cmd)
	if !ok && len(a.Writable) == 0 {
		return "none: not confined as a whole unless --sandbox-agent"
	}
	s := prof.Describe()
	if len(a.Writable) > 0 {
		s = strings.Join(a.Writable, ", ") + " (config); " + s
	}
	return s
}
