// Command acpterm runs Agent Client Protocol (ACP) agents with full
// terminal support: `acpterm run -- AGENT` drives any ACP agent headlessly
// and shows its commands' output live, `acpterm agent` is a built-in agent
// that runs shell commands through its client's terminals, and
// `acpterm demo` shows both working together. docs/cli.md in the
// repository documents every command and flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/proc/cgroup"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

func main() {
	sandbox.Init() // first: as a sandbox helper, it applies the policy and execs the command
	if os.Getenv("GOGC") == "" {
		// acpterm's heap is mostly large pointer-free buffers (terminal
		// output, agent messages), which a collection marks cheaply.
		// Collecting at 50 % growth instead of Go's 100 % keeps the peak
		// near 1.5 times what is live: for a 60 MiB message, under three
		// times its size rather than four.
		debug.SetGCPercent(50)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(relayProcs(runtime.GOMAXPROCS(0)))
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// relayProcs is how many threads acpterm runs Go code on, of the n the
// runtime would use: half, at least one.
//
// Why: acpterm relays what its commands write, and its goroutines spend
// their time waiting for pipes. Each extra P lets the scheduler spin for
// work and hand a woken goroutine from one thread to another, which costs
// CPU time and cross-CPU wakeups that the commands being relayed need: on
// two cores, `head | tr` captured by one P used about a quarter less CPU
// in all than with two, and ran faster end to end (BenchmarkRunCapture).
// Half the CPUs still leaves room for many busy terminals and for
// encoding large messages while output is read.
func relayProcs(n int) int {
	return max(1, n/2)
}

// mainUsage is the top-level help; its exit table comes from client.ExitMeanings.
var mainUsage = fmt.Sprintf(`acpterm runs Agent Client Protocol (ACP) agents with full terminal support.

Usage:
  acpterm run [flags] -- AGENT [ARGS...]   run one prompt with any ACP agent
  acpterm run [flags] NAME [ARGS...]       the same with a known agent (acpterm agents);
                                           without a prompt on a terminal: an interactive session
  acpterm sessions [AGENT]                 list the sessions remembered (and the agent's own)
  acpterm agents                           list the known agents and whether each is installed
  acpterm login [--method ID] -- AGENT...  log in to an agent (its terminal login)
  acpterm agent [flags]                    serve the built-in agent on stdin/stdout
  acpterm demo [flags]                     run the built-in agent under acpterm run
  acpterm probe [flags]                    serve a conformance probe of a client's terminals
  acpterm sandbox                          show what the command sandbox enforces here
  acpterm exec-server [flags]              serve the terminal runtime on stdin/stdout to a remote acpterm
  acpterm mcp [flags]                      serve sandboxed commands as an MCP server on stdin/stdout
  acpterm version                          print the version
  acpterm help [COMMAND]                   print help

Exit status (run, demo):
%s
Run "acpterm help COMMAND" for a command's flags.
`, client.ExitTable())

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return client.ExitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runCmd(ctx, rest, stdin, stdout, stderr)
	case "login":
		return loginCmd(ctx, rest, stdin, stdout, stderr)
	case "agents":
		return agentsCmd(ctx, rest, stdout, stderr)
	case "sessions":
		return sessionsCmd(ctx, rest, stdout, stderr)
	case "agent":
		return agentCmd(ctx, rest, stdin, stdout, stderr)
	case "demo":
		return demoCmd(ctx, rest, stdin, stdout, stderr)
	case "probe":
		return probeCmd(ctx, rest, stdin, stdout, stderr)
	case "sandbox":
		return sandboxCmd(ctx, rest, stdout, stderr)
	case "exec-server":
		return execServerCmd(ctx, rest, stdin, stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, rest, stdin, stdout, stderr)
	case "version", "-version", "--version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "acpterm version: unexpected arguments %q\n", rest)
			return client.ExitUsage
		}
		fmt.Fprintf(stdout, "acpterm %s %s %s/%s\n", client.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return client.ExitOK
	case "help", "-h", "-help", "--help":
		return helpCmd(rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "acpterm: unknown command %q\n\n%s", cmd, mainUsage)
	return client.ExitUsage
}

func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, mainUsage)
		return client.ExitOK
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "acpterm help: unexpected arguments %q: acpterm help [COMMAND]\n", args[1:])
		return client.ExitUsage
	}
	switch args[0] {
	case "run":
		newRunFlags(stdout).fs.Usage()
	case "login":
		newLoginFlags(stdout).fs.Usage()
	case "agents":
		newAgentsFlags(stdout).Usage()
	case "sessions":
		newSessionsFlags(stdout).fs.Usage()
	case "agent":
		newAgentFlags(stdout).fs.Usage()
	case "demo":
		newDemoFlags(stdout).fs.Usage()
	case "probe":
		newProbeFlags(stdout).fs.Usage()
	case "sandbox":
		newSandboxFlags(stdout).Usage()
	case "exec-server":
		newExecServerFlags(stdout).fs.Usage()
	case "mcp":
		newMCPFlags(stdout).fs.Usage()
	case "version":
		fmt.Fprintln(stdout, "usage: acpterm version\n\nPrints acpterm's version, the Go version and the platform.")
	case "help":
		fmt.Fprint(stdout, mainUsage)
	default:
		fmt.Fprintf(stderr, "acpterm: unknown command %q\n\n%s", args[0], mainUsage)
		return client.ExitUsage
	}
	return client.ExitOK
}

// parseFlags parses a subcommand's flags: -h prints its help (exit 0), an
// error its message and help (exit 2). ok is false when the command is
// over.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return client.ExitOK, false
	}
	return client.ExitUsage, false
}

// usageText writes a subcommand's help: head, then its flags.
func usageText(fs *flag.FlagSet, head string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprint(w, head)
		fmt.Fprintln(w, "\nFlags:")
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix(f.Usage, "-") {
				return // an alias, listed with its long form
			}
			name, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if alias := aliases[f.Name]; alias != "" {
				line = "  -" + alias + ", --" + f.Name
			}
			if name != "" {
				line += " " + name
			}
			fmt.Fprintln(w, line)
			fmt.Fprintf(w, "        %s", strings.ReplaceAll(usage, "\n", "\n        "))
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
}

// aliases maps a long flag to its one-letter alias.
var aliases = map[string]string{"prompt": "p"}

// Backstops of the exit after Ctrl-C or SIGTERM. client.Run is bounded on
// its own (see its shutdown), but a write to a stdout or stderr whose
// reader stalled blocks in the kernel, and so would acpterm; past these
// bounds it exits with 130 regardless, after the run has killed what it
// can. The agent and the terminals' leaders die with acpterm
// (PR_SET_PDEATHSIG), and what they started is in cgroups that hardExit
// kills (or, failing that, the next acpterm removes as stale).
const (
	// hardExitWait is how long after the second signal, which kills the
	// agent and its terminals at once, acpterm waits for Run to return.
	hardExitWait = 3 * time.Second
	// shutdownSlack is Run's bound after the cancel grace period and the
	// terminals' kill grace (7.5 s, see client's shutdown), rounded up.
	shutdownSlack = 10 * time.Second
)

// stopSignals end a run: Ctrl-C, SIGTERM, the terminal closing or the ssh
// connection dropping (SIGHUP), and Ctrl-\ (SIGQUIT). Left to Go's
// defaults the last two would end acpterm at once, before it has killed
// the agent and its terminals, whose children would live on.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runWithSignals runs run with the stopSignals delivered to it as
// cfg.Interrupts: the first cancels the turn, the second kills the agent
// and its terminals. It exits the process with 130 if run has not returned
// hardExitWait after the second signal (a third exits at once), or
// CancelGrace + KillGrace + shutdownSlack after the first.
func runWithSignals(ctx context.Context, cfg *client.Config, run func(context.Context, *client.Config) int) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)
	// Room for the two signals Run acts on, so forwarding never blocks.
	fwd := make(chan os.Signal, 2)
	cfg.Interrupts = fwd
	first := cancelGrace(cfg) + killGrace(cfg) + shutdownSlack
	done := make(chan struct{})
	// An interactive session's turns each get their own two signals.
	turnDone := make(chan struct{}, 1)
	cfg.TurnDone = func() {
		select {
		case turnDone <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchExit(sigs, fwd, turnDone, done, first)
	}()
	code := run(ctx, cfg)
	close(done)
	wg.Wait()
	return code
}

// watchExit forwards signals to Run and enforces the backstops until done
// is closed. A turn of an interactive session that ended (turnDone) starts
// the count again.
func watchExit(sigs <-chan os.Signal, fwd chan<- os.Signal, turnDone, done <-chan struct{}, first time.Duration) {
	n := 0
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var deadline <-chan time.Time
	forward := func(s os.Signal) {
		select {
		case fwd <- s:
		case <-done:
		}
	}
	for {
		select {
		case <-done:
			return
		case <-turnDone:
			n = 0
			t.Stop()
			deadline = nil
		case s := <-sigs:
			n++
			switch n {
			case 1:
				forward(s)
				t.Reset(first)
			case 2:
				forward(s)
				t.Reset(hardExitWait)
			default:
				hardExit("a third interrupt")
			}
			deadline = t.C
		case <-deadline:
			hardExit("the shutdown did not finish in time")
		}
	}
}

// hardExit ends acpterm at once with 130.
func hardExit(why string) {
	// Our stderr may be what is stuck: the note gets 100 ms.
	wrote := make(chan struct{})
	go func() {
		fmt.Fprintf(os.Stderr, "acpterm: exiting at once: %s\n", why)
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(100 * time.Millisecond):
	}
	// The agent and the terminals' leaders die with acpterm; what they
	// started is killed here, so that nothing waits for the next acpterm
	// to find it stale.
	cgroup.RemoveOwn(500 * time.Millisecond)
	os.Exit(client.ExitCancelled)
}

func cancelGrace(cfg *client.Config) time.Duration {
	if cfg.CancelGrace > 0 {
		return cfg.CancelGrace
	}
	return client.DefaultCancelGrace
}

func killGrace(cfg *client.Config) time.Duration {
	if cfg.KillGrace > 0 {
		return cfg.KillGrace
	}
	return terminal.DefaultKillGrace
}
