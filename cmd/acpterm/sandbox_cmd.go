package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/acpterm/acpterm/internal/client"
	"github.com/acpterm/acpterm/sandbox"
)

// sandboxFlags are the sandbox flags of run and demo.
type sandboxFlags struct {
	mode     string
	network  string
	writable []string
	gitRW    bool
	agent    bool
}

func (f *sandboxFlags) add(fs *flag.FlagSet) {
	f.mode, f.network = "workspace-write", "allow"
	fs.StringVar(&f.mode, "sandbox", f.mode, "confine the agent's commands: `MODE` off, read-only (write only a private\nTMPDIR) or workspace-write (also the roots and the build caches)")
	fs.StringVar(&f.network, "network", f.network, "the sandboxed commands' network, `NET`: allow, or deny (only a loopback\nof their own)")
	fs.Var(listFlag{&f.writable}, "writable", "also let sandboxed commands write `PATH` (with everything below it);\nrepeatable; workspace-write only")
	fs.BoolVar(&f.gitRW, "writable-git", false, "leave the .git of writable directories writable (by default it is\nread-only: hooks and config written there would run outside the sandbox)")
	fs.BoolVar(&f.agent, "sandbox-agent", false, "run the agent itself, and all it starts, in the same sandbox\n(give its state directories with --writable)")
}

// apply checks the flags and sets cfg's sandbox fields.
func (f *sandboxFlags) apply(cfg *client.Config) error {
	switch f.mode {
	case "off":
		cfg.Sandbox = sandbox.Off
	case "read-only":
		cfg.Sandbox = sandbox.ReadOnly
	case "workspace-write":
		cfg.Sandbox = sandbox.WorkspaceWrite
	default:
		return fmt.Errorf("--sandbox must be off, read-only or workspace-write, not %q", f.mode)
	}
	switch f.network {
	case "allow":
		cfg.Network = sandbox.AllowNetwork
	case "deny":
		cfg.Network = sandbox.DenyNetwork
	default:
		return fmt.Errorf("--network must be allow or deny, not %q", f.network)
	}
	for _, w := range f.writable {
		abs, err := filepath.Abs(w)
		if err != nil {
			return fmt.Errorf("--writable %s: %v", w, err)
		}
		cfg.Writable = append(cfg.Writable, abs)
	}
	// Only workspace-write lets commands write anything but their TMPDIR.
	switch {
	case len(f.writable) > 0 && cfg.Sandbox != sandbox.WorkspaceWrite:
		return fmt.Errorf("--writable needs --sandbox workspace-write (not %s)", f.mode)
	case f.gitRW && cfg.Sandbox != sandbox.WorkspaceWrite:
		return fmt.Errorf("--writable-git needs --sandbox workspace-write (not %s)", f.mode)
	case f.agent && cfg.Sandbox == sandbox.Off && cfg.Network == sandbox.AllowNetwork:
		return errors.New("--sandbox-agent with --sandbox off and --network allow confines nothing")
	}
	cfg.SandboxAgent, cfg.WritableGit = f.agent, f.gitRW
	return nil
}

const sandboxUsage = `usage: acpterm sandbox

Prints what this machine can enforce (Landlock ABI, namespaces) and, for
each mode and network setting, what acpterm run --sandbox MODE --network
NET would enforce here, with the current directory as the workspace.

The modes (run and demo use workspace-write unless told otherwise):
  off              commands run with your rights
  read-only        commands read anywhere and write only their private
                   TMPDIR and /dev/null, /dev/zero, /dev/full
  workspace-write  read-only, plus the workspace roots, the build caches of
                   Go, npm, pip and cargo, ~/.cache and each --writable
                   path; the .git of each writable directory stays read-only
Network deny runs the commands in a network namespace with only a
loopback of their own: not even the host's 127.0.0.1 is reachable.

The sandbox is implemented on Linux only; elsewhere every mode but off
is refused. See the README's "Sandbox" section for what it does not stop.
`

func newSandboxFlags(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("acpterm sandbox", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(fs.Output(), sandboxUsage) }
	return fs
}

func sandboxCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newSandboxFlags(stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm sandbox: unexpected arguments %q\n(see acpterm help sandbox)\n", fs.Args())
		return client.ExitUsage
	}
	fmt.Fprint(stdout, sandbox.Support().String())
	return client.ExitOK
}
