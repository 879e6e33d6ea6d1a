package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
)

// demoPrompt has one command per feature the demo shows: plain output,
// output streaming for a while, a failing exit code, output cut to the
// agent's limit, and a command killed by the client's timeout.
const demoPrompt = `echo hello from acpterm; uname -s
for i in 1 2 3 4 5; do echo tick $i; sleep 0.4; done
echo failing >&2; exit 3
seq 1 200000
sleep 30
`

// Limits of the demo run, chosen so that the last two commands show
// truncation and a timeout kill within a few seconds.
const (
	demoOutputLimit = "4KiB"
	demoTimeout     = 3 * time.Second
)

var demoUsage = `usage: acpterm demo [flags]

Runs acpterm's built-in agent (this binary, as "acpterm agent --keep-going
--output-limit ` + demoOutputLimit + `") under "acpterm run --approve-all --timeout ` + "3s" + `"
with this prompt, one command per line:

` + indent(demoPrompt) + `
It shows a command's output, output streaming live, a failing exit code,
output truncated to the agent's 4 KiB limit, and a command killed by its
timeout. It needs nothing but the binary and takes about six seconds.
The commands run in the sandbox, workspace-write by default (see acpterm
help run and acpterm sandbox).
`

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}

func newDemoFlags(out io.Writer) *runFlags {
	f := &runFlags{fs: flag.NewFlagSet("acpterm demo", flag.ContinueOnError), format: "text"}
	f.fs.SetOutput(out)
	f.addCommon(f.fs)
	f.sandbox.add(f.fs)
	f.fs.Usage = usageText(f.fs, demoUsage)
	return f
}

func demoCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newDemoFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm demo: unexpected arguments %q\n(see acpterm help demo)\n", f.fs.Args())
		return client.ExitUsage
	}
	format, text, err := f.output(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm demo: %v\n", err)
		return client.ExitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "acpterm demo: cannot find the acpterm binary to run as the agent: %v\n", err)
		return client.ExitFailure
	}
	if format == client.FormatText {
		fmt.Fprintf(stdout, "acpterm demo: the built-in agent runs five commands through acpterm's terminals\n(approved automatically; agent output limit %s, command timeout %s)\n\n", demoOutputLimit, demoTimeout)
	}
	cfg := &client.Config{
		Agent:    []string{exe, "agent", "--keep-going", "--output-limit", demoOutputLimit},
		Prompt:   demoPrompt,
		Format:   format,
		Approval: permission.ApprovalAll,
		Text:     text,
		Timeout:  demoTimeout,
		Stdout:   stdout,
		Stderr:   stderr,
	}
	if err := f.sandbox.apply(cfg); err != nil {
		fmt.Fprintf(stderr, "acpterm demo: %v\n(see acpterm help demo)\n", err)
		return client.ExitUsage
	}
	return runClient(ctx, cfg)
}
