package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
)

const probeUsage = `usage: acpterm probe [flags]

Serves a conformance probe as an ACP agent on stdin and stdout. Prompted
with anything, it runs a suite of cases against the connected client's
terminal methods (terminal/create, output, wait_for_exit, kill, release),
reports each case as a tool call, and ends with a table. Normative cases
are what the ACP specification asks of a client; informational ones are
conventions, reported as observed and never failed.

Point any ACP client at it as at any agent. From Zed, in settings.json:

  {
    "agent_servers": {
      "acpterm-probe": {
        "type": "custom",
        "command": "acpterm",
        "args": ["probe", "--json", "/tmp/acpterm-probe.json"]
      }
    }
  }

and against acpterm itself: acpterm run --approve-all -p go -- acpterm probe
`

type probeFlags struct {
	fs       *flag.FlagSet
	jsonPath string
	cases    caseList
	timeout  time.Duration
	list     bool
}

func newProbeFlags(out io.Writer) *probeFlags {
	f := &probeFlags{fs: flag.NewFlagSet("acpterm probe", flag.ContinueOnError)}
	f.fs.SetOutput(out)
	f.fs.StringVar(&f.jsonPath, "json", "", "also write the report as JSON to `FILE`")
	f.fs.Var(&f.cases, "case", "run only case `ID` (repeatable, or comma-separated; see --list)")
	f.fs.DurationVar(&f.timeout, "timeout", probe.DefaultCaseTimeout, "time limit of each case, `DURATION`")
	f.fs.BoolVar(&f.list, "list", false, "print the cases and exit")
	f.fs.Usage = usageText(f.fs, probeUsage)
	return f
}

// probeCmd serves the probe. stdin and stdout carry the protocol, so
// everything meant for people goes to stderr, except --list.
func probeCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newProbeFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm probe: unexpected arguments %q\n(see acpterm help probe)\n", f.fs.Args())
		return client.ExitUsage
	}
	if f.timeout <= 0 {
		fmt.Fprintf(stderr, "acpterm probe: --timeout must be positive, not %v\n(see acpterm help probe)\n", f.timeout)
		return client.ExitUsage
	}
	known := map[string]bool{}
	for _, c := range probe.Cases() {
		known[c.ID] = true
	}
	for _, id := range f.cases {
		if !known[id] {
			fmt.Fprintf(stderr, "acpterm probe: --case: unknown case %q (acpterm probe --list shows them)\n", id)
			return client.ExitUsage
		}
	}
	if f.list {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tKIND\tRULE")
		for _, c := range probe.Cases() {
			kind := "normative"
			if !c.Normative {
				kind = "info"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, kind, c.Rule)
		}
		tw.Flush()
		return client.ExitOK
	}
	if f.jsonPath != "" {
		// The client picks the probe's working directory; pin the path now.
		abs, err := filepath.Abs(f.jsonPath)
		if err != nil {
			fmt.Fprintf(stderr, "acpterm probe: --json: %v\n", err)
			return client.ExitUsage
		}
		f.jsonPath = abs
	}
	hintIfTerminal(stdin, stderr, "probe", "acpterm run --approve-all -p go -- acpterm probe")
	err := probe.Serve(ctx, stdin, stdout, &probe.Options{
		JSONReport: f.jsonPath, Cases: f.cases, CaseTimeout: f.timeout, Version: client.Version(),
	})
	// Stopped through ctx is how the command is told to end, not a failure.
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "acpterm probe: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// caseList collects --case values.
type caseList []string

func (l *caseList) String() string { return strings.Join(*l, ",") }

func (l *caseList) Set(s string) error {
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	return nil
}
