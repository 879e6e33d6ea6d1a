package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/terminal"
)

// terminalFlags are the flags of the limits and the shell of the agent's
// terminals, which run and exec-server share: the same names, defaults
// and checks wherever the commands run. run passes those that differ from
// the defaults on to the exec server of a --remote target.
type terminalFlags struct {
	outputLimit  uint64
	maxTerminals int
	killGrace    time.Duration
	timeout      time.Duration
	shell        string
}

func (f *terminalFlags) add(fs *flag.FlagSet) {
	f.outputLimit = terminal.DefaultOutputCeiling
	fs.Var(sizeFlag{&f.outputLimit}, "output-limit", "host ceiling on each terminal's output buffer, `SIZE` in bytes\nor with a unit: 64KiB, 16MiB (K/M/G are 1024-based, KB/MB/GB 1000-based)")
	fs.IntVar(&f.maxTerminals, "max-terminals", terminal.DefaultMaxTerminalsPerSession, "at most `N` live terminals for the agent at once")
	fs.DurationVar(&f.killGrace, "kill-grace", terminal.DefaultKillGrace, "wait `DURATION` between SIGTERM and SIGKILL when a command is killed")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill any command that runs longer than this `DURATION` (default: none)")
	fs.StringVar(&f.shell, "shell", "", "the shell `PATH` that runs commands sent as one line\n(default: $SHELL when it is a POSIX shell, else /bin/sh)")
}

// check refuses limits out of range. The library reads 0 (or less) as
// "the default" or "no limit": a value given on the command line means
// what it says, or is refused.
func (f *terminalFlags) check() error {
	switch {
	case f.maxTerminals < 1:
		return fmt.Errorf("--max-terminals must be at least 1, not %d", f.maxTerminals)
	case f.killGrace <= 0:
		return fmt.Errorf("--kill-grace must be positive, not %v", f.killGrace)
	case f.timeout < 0:
		return fmt.Errorf("--timeout must not be negative, not %v", f.timeout)
	case f.outputLimit == 0:
		return errors.New("--output-limit must be positive")
	}
	return nil
}

// checkServer checks the flags of a server that runs commands here
// (exec-server, mcp) and resolves its --cwd (serverCwd).
func (f *terminalFlags) checkServer(cwd string) (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	return serverCwd(cwd)
}

// options sets the limits and the shell in opts, whose Policy is set.
// The bound on terminals is the agent's, not only its session's: the
// session ID of a terminal/create is the agent's to write.
func (f *terminalFlags) options(opts *terminal.Options) {
	opts.Policy.MaxTerminalsPerSession = f.maxTerminals
	opts.Policy.MaxTerminals = f.maxTerminals
	opts.Policy.OutputCeiling = f.outputLimit
	opts.Policy.Timeout = f.timeout
	opts.Shell = f.shell
	opts.KillGrace = f.killGrace
}
