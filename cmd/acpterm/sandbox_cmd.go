package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
)

// sandboxFlags are the sandbox flags of run and demo.
type sandboxFlags struct {
	mode    string
	network string
	// networkSet: --network was given (else defaultNetwork may limit a
	// confined agent to its hosts).
	networkSet bool
	writable   []string
	gitRW      bool
	cfgRW      bool
	passEnv    []string
	agent      autoBool
	readable   []string
	sshAgent   bool
	maskKeys   bool
	// allowHosts limits the network to a list (--allow-host).
	allowHosts []string
}

// autoBool is a boolean flag that knows whether it was given: unset,
// --sandbox-agent follows the agent's profile.
type autoBool struct{ set, value bool }

func (b *autoBool) String() string {
	if b == nil || !b.set {
		return "auto"
	}
	return strconv.FormatBool(b.value)
}

func (b *autoBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.value = true, v
	return nil
}

// IsBoolFlag lets --sandbox-agent stand alone, as a boolean flag does.
func (b *autoBool) IsBoolFlag() bool { return true }

func (f *sandboxFlags) add(fs *flag.FlagSet) {
	f.mode, f.network = "workspace-write", "allow"
	fs.StringVar(&f.mode, "sandbox", f.mode, "confine the agent's commands: `MODE` off, read-only (write only a private\nTMPDIR) or workspace-write (also the roots and build caches of their own)")
	fs.Var(setString{&f.network, &f.networkSet}, "network", "the sandboxed commands' network, `NET`: allow, deny (only a loopback\nof their own), or proxy (only the hosts of --allow-host, through a proxy);\nleft out, a confined agent with a hosts list (acpterm agents) and its\ncommands get the network of proxy, with the agent's hosts for the agent")
	fs.Var(listFlag{&f.allowHosts}, "allow-host", "let sandboxed commands reach `HOST` through acpterm's proxy, and nothing\nelse: a name, *.name (its subdomains), either with :port, or an address\n(127.0.0.1:8080, [::1]:443); repeatable; implies --network proxy")
	fs.Var(listFlag{&f.writable}, "writable", "also let sandboxed commands write `PATH` (with everything below it);\nrepeatable; workspace-write only")
	fs.BoolVar(&f.gitRW, "writable-git", false, "leave the .git of writable directories writable (by default it is\nread-only: hooks and config written there would run outside the sandbox)")
	fs.BoolVar(&f.cfgRW, "writable-config", false, "let the sandbox write the files that editors and agents run things from\n(.vscode, .claude, .mcp.json, shell rc files, the agent's own hooks and\nextensions; read-only by default, since programs started later, outside the\nsandbox, run them)")
	fs.Var(listFlag{&f.passEnv}, "pass-env", "let the variable `NAME` reach the commands although it carries a credential\n(a name with KEY, SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE, AUTH,\nCREDENTIAL or COOKIE, or ending in _PAT or _DSN, but not SSH_AUTH_SOCK;\na value that is a URL with a password); repeatable")
	fs.Var(listFlag{&f.readable}, "readable", readableHelp)
	fs.BoolVar(&f.sshAgent, "ssh-agent", false, sshAgentHelp)
	fs.BoolVar(&f.maskKeys, "mask-keys", true, maskKeysHelp)
	fs.Var(&f.agent, "sandbox-agent", "run the agent itself, and all it starts, in the same sandbox, with\nthe writable paths of its profile (acpterm agents); on by default for an\nagent with a profile, =false turns it off")
}

// parseMode reads --sandbox.
func parseMode(s string) (sandbox.Mode, error) {
	switch s {
	case "off":
		return sandbox.Off, nil
	case "read-only":
		return sandbox.ReadOnly, nil
	case "workspace-write":
		return sandbox.WorkspaceWrite, nil
	}
	return 0, fmt.Errorf("--sandbox must be off, read-only or workspace-write, not %q", s)
}

// parseNetwork reads --network.
func parseNetwork(s string) (sandbox.Network, error) {
	switch s {
	case "allow":
		return sandbox.AllowNetwork, nil
	case "deny":
		return sandbox.DenyNetwork, nil
	case "proxy":
		return sandbox.ProxyNetwork, nil
	}
	return 0, fmt.Errorf("--network must be allow or deny (or proxy, with --allow-host), not %q", s)
}

// apply checks the flags and sets cfg's sandbox fields.
func (f *sandboxFlags) apply(cfg *client.Config) error {
	var err error
	if cfg.Sandbox, err = parseMode(f.mode); err != nil {
		return err
	}
	if cfg.Network, err = parseNetwork(f.network); err != nil {
		return err
	}
	if err := f.applyHosts(cfg); err != nil {
		return err
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
	case f.agent.set && f.agent.value && cfg.Sandbox == sandbox.Off && cfg.Network == sandbox.AllowNetwork && cfg.Remote == nil:
		return errors.New("--sandbox-agent with --sandbox off and --network allow confines nothing")
	}
	cfg.WritableGit = f.gitRW
	cfg.WritableConfig = f.cfgRW
	for _, n := range f.passEnv {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return fmt.Errorf("--pass-env wants a variable name, not %q", n)
		}
	}
	cfg.PassEnv = f.passEnv
	if cfg.Readable, err = absPaths("--readable", f.readable); err != nil {
		return err
	}
	cfg.SSHAgent = f.sshAgent
	cfg.MaskKeys = f.maskKeys
	return f.applyAgent(cfg)
}

// applyAgent decides whether the agent itself is confined, and with what
// profile: an agent with a profile (a named agent, a program of one by its
// base name, an agents.json entry with writable paths) is, unless
// --sandbox-agent=false or the sandbox is off; any other only with
// --sandbox-agent. With --remote the same holds for the agent here
// (confined to its own state: its commands run on the target) and, with
// --remote-agent, for the agent there.
func (f *sandboxFlags) applyAgent(cfg *client.Config) error {
	prof, err := agentProfile(cfg.AgentName, cfg.Agent)
	if err != nil {
		return err
	}
	cfg.AgentProfile = prof
	if cfg.Network == sandbox.ProxyNetwork {
		if cfg.AgentHosts, err = agentHosts(cfg.AgentName, cfg.Agent); err != nil {
			return err
		}
	}
	switch {
	case f.agent.set:
		cfg.SandboxAgent = f.agent.value
	default:
		cfg.SandboxAgent = prof != nil && prof.NotByDefault == "" && cfg.Sandbox != sandbox.Off
	}
	return f.defaultNetwork(cfg)
}

// agentProfile is the resolved profile of the agent started by name (""
// for a command line) as command, or nil when it has none. Paths are
// resolved in acpterm's environment, which the agent inherits.
func agentProfile(name string, command []string) (*agents.Resolved, error) {
	reg, err := agents.Load("")
	if err != nil {
		return nil, err
	}
	prof, ok := reg.ProfileFor(command)
	var extra []string
	if a, found := reg.Lookup(name); found && name != "" {
		extra = a.Writable
	}
	if !ok && len(extra) == 0 {
		return nil, nil
	}
	r, err := prof.Resolve(os.Getenv, extra)
	if err != nil {
		return nil, fmt.Errorf("the profile of %s: %v", filepath.Base(command[0]), err)
	}
	return r, nil
}

const sandboxUsage = `usage: acpterm sandbox [--remote TARGET]

Prints what this machine can enforce (Landlock ABI, namespaces) and, for
each mode and network setting, what acpterm run --sandbox MODE --network
NET would enforce here, with the current directory as the workspace.

With --remote TARGET (see acpterm help run) it asks the target instead:
what its kernel and user can enforce, as its exec server reports it, and
for each mode and network setting whether acpterm run --remote TARGET
would enforce it there, in its directory, and what it would do without.
It starts the exec server there once per setting (acpterm is copied there
first when the target has none of this build).

The modes (run and demo use workspace-write unless told otherwise):
  off              commands run with your rights
  read-only        commands read anywhere and write only their private
                   TMPDIR and /dev/null, /dev/zero, /dev/full
  workspace-write  read-only, plus the workspace roots, build caches of their
                   own (Go, npm, pip, cargo, uv, XDG_CACHE_HOME, in
                   ~/.local/state/acpterm/sandbox-cache; yours stay
                   read-only) and each --writable path; the .git of each
                   writable directory stays read-only
Network deny runs the commands in a network namespace with only a
loopback of their own: not even the host's 127.0.0.1 is reachable.

The sandbox is implemented on Linux only; elsewhere every mode but off
is refused. docs/sandbox.md says what it does not stop.
`

// sandboxCmdFlags are acpterm sandbox's flags.
type sandboxCmdFlags struct {
	*flag.FlagSet
	remote remoteFlags
}

func newSandboxFlags(out io.Writer) *sandboxCmdFlags {
	f := &sandboxCmdFlags{FlagSet: flag.NewFlagSet("acpterm sandbox", flag.ContinueOnError)}
	f.SetOutput(out)
	f.remote.addAsk(f.FlagSet)
	f.Usage = usageText(f.FlagSet, sandboxUsage)
	return f
}

func sandboxCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags(stderr)
	if code, ok := parseFlags(f.FlagSet, args); !ok {
		return code
	}
	if f.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm sandbox: unexpected arguments %q\n(see acpterm help sandbox)\n", f.Args())
		return client.ExitUsage
	}
	if f.remote.target == "" {
		if f.remote.given(f.FlagSet) {
			fmt.Fprintf(stderr, "acpterm sandbox: --remote-binary, --remote-install-dir, --remote-tool and --remote-tool-arg need --remote TARGET\n")
			return client.ExitUsage
		}
		rep := sandbox.Support()
		fmt.Fprint(stdout, rep.String())
		if rep.OS == "linux" {
			fmt.Fprint(stdout, textsafe.Text(localSecrets()))
		}
		return client.ExitOK
	}
	rc, err := f.remote.config()
	if err != nil {
		fmt.Fprintf(stderr, "acpterm sandbox: %v\n(see acpterm help sandbox)\n", err)
		return client.ExitUsage
	}
	return remoteSandbox(ctx, rc, stdout, stderr)
}
