package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/sandbox"
)

// ConnectOptions configure Connect. A nil *ConnectOptions or zero fields
// mean the defaults.
type ConnectOptions struct {
	// Sandbox is what the target confines its commands with, as
	// terminal.Policy.Sandbox is locally: nil runs them unconfined. Its
	// paths (Writable) are the target's. The target's exec server keeps
	// its own caches, protected files and temporary directories, so
	// Caches, CacheDir, Protected and TempDir must be empty, and Proxy
	// nil: with ProxyNetwork the target runs a proxy of its own for
	// AllowHosts.
	//
	// A target that cannot enforce the policy fails Connect with a
	// *SandboxError, as a local create fails, unless the policy accepts
	// less: WithoutMountNamespace accepts what only a mount namespace
	// gives (a target without user namespaces), BestEffort anything the
	// target reports missing (Client.Hello().Sandbox.Missing). A target
	// whose exec server cannot set the policy up at all always fails.
	Sandbox *sandbox.Policy
	// Tool is the transport's local program ("": ssh, podman, docker or
	// kubectl, after the target's kind) and ToolArgs its options, put
	// before the target (ssh's -F FILE, -o NAME=VALUE; kubectl's
	// --kubeconfig FILE).
	Tool     string
	ToolArgs []string
	// Binary names an acpterm already on the target: Connect then copies
	// nothing and runs it as it is. "" means this program's own build,
	// found on the target or copied there first (Install).
	Binary string
	// Install configures the search and the copy (where copies are kept);
	// its Writable is filled from Sandbox.Writable when empty.
	Install *InstallOptions
	// Installed, when set, is what an earlier Install found or copied:
	// Connect then neither looks nor copies.
	Installed *Installed
	// ServerArgs are more exec-server flags, after the sandbox's: limits
	// (--output-limit, --max-terminals, --kill-grace, --timeout), --shell,
	// --pass-env NAME.
	ServerArgs []string
	// Client configures the client. Connect fills in its Where (the
	// target without its directory) and Sandbox (from the hello) when
	// they are empty.
	Client *ClientOptions
}

// Connect makes a ready Client for target (ParseTarget's grammar:
// ssh://[USER@]HOST[:PORT][/DIR], podman://CONTAINER[/DIR],
// docker://CONTAINER[/DIR], k8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER]):
// it finds this acpterm on the target or copies it there (Install),
// starts its exec server through the transport's own tool in a process
// group of its own (so that the caller's Ctrl-C does not kill the
// transport: see Command), makes the hello exchange within ctx and
// checks that the target enforces opts.Sandbox. A failure is told in
// the transport's own words when it wrote any (ssh's "Connection
// refused", podman's "no such container"): a *DialError. Close the
// client to release its terminals and end the exec server.
func Connect(ctx context.Context, target string, opts *ConnectOptions) (*Client, error) {
	t, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	return ConnectTarget(ctx, t, opts)
}

// ConnectTarget is Connect for a parsed target.
func ConnectTarget(ctx context.Context, t Target, opts *ConnectOptions) (*Client, error) {
	if opts == nil {
		opts = &ConnectOptions{}
	}
	sargs, err := SandboxArgs(opts.Sandbox)
	if err != nil {
		return nil, err
	}
	in := opts.Installed
	if in == nil {
		iopts := InstallOptions{}
		if opts.Install != nil {
			iopts = *opts.Install
		}
		if iopts.Writable == nil && opts.Sandbox != nil {
			iopts.Writable = opts.Sandbox.Writable
		}
		if in, err = Install(ctx, t, &CommandOptions{Binary: opts.Binary, Tool: opts.Tool, ToolArgs: opts.ToolArgs}, &iopts); err != nil {
			return nil, err
		}
	}
	copts := in.Options(CommandOptions{Tool: opts.Tool, ToolArgs: opts.ToolArgs,
		ServerArgs: append(sargs, opts.ServerArgs...)})
	cmd, err := Command(t, copts)
	if err != nil {
		return nil, err
	}
	conn, err := Dial(cmd)
	if err != nil {
		return nil, err
	}
	var clopts ClientOptions
	if opts.Client != nil {
		clopts = *opts.Client
	}
	if clopts.Where == "" {
		host := t
		host.Dir = ""
		clopts.Where = host.String()
	}
	cl, err := NewClient(ctx, conn, &clopts)
	if err != nil {
		// NewClient closed conn: its stderr is complete.
		return nil, &DialError{Stderr: strings.TrimSpace(conn.Stderr()), Err: err}
	}
	cl.installed = in
	h := cl.Hello()
	if err := checkSandbox(h, opts.Sandbox); err != nil {
		_ = cl.Close()
		return nil, err
	}
	cl.mu.Lock()
	if cl.applied == nil {
		cl.applied = appliedOf(h.Sandbox, opts.Sandbox)
	}
	cl.mu.Unlock()
	return cl, nil
}

// Installed is what Connect (Install) found or copied on the target:
// the acpterm that serves this client, which can host an agent there
// too (AgentCommand with Installed.Options). nil for a client made with
// NewClient.
func (c *Client) Installed() *Installed { return c.installed }

// Sandbox is what the target confines the client's commands with (each
// terminal's Info.Sandbox); nil when they are not confined.
func (c *Client) Sandbox() *sandbox.Applied {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied
}

// DialError is Connect's error when the exec server could not be
// reached: Stderr is what the transport said (ssh's "Connection
// refused"), Err what the client saw.
type DialError struct {
	Stderr string
	Err    error
}

func (e *DialError) Error() string {
	if e.Stderr != "" {
		return e.Stderr
	}
	return e.Err.Error()
}

func (e *DialError) Unwrap() error { return e.Err }

// SandboxError is Connect's error when the target does not enforce the
// sandbox asked for: Reason says why, Hello is what its exec server said
// of itself.
type SandboxError struct {
	Reason string
	Hello  HelloResponse
}

func (e *SandboxError) Error() string { return "remote: the target's sandbox: " + e.Reason }

// ErrSandboxOption is wrapped by SandboxArgs' error for a policy field
// that a target cannot be given.
var ErrSandboxOption = errors.New("remote: a sandbox setting the exec server cannot take")

// SandboxArgs are the exec server's flags for p: --sandbox MODE
// --network NET, --writable PATH for each of p.Writable, --writable-git
// and --writable-config. nil is --sandbox off --network allow.
func SandboxArgs(p *sandbox.Policy) ([]string, error) {
	if p == nil {
		return []string{"--sandbox", sandbox.Off.String(), "--network", sandbox.AllowNetwork.String()}, nil
	}
	switch {
	case len(p.Caches) > 0:
		return nil, fmt.Errorf("%w: Caches (the target keeps its commands' own caches)", ErrSandboxOption)
	case p.CacheDir != "":
		return nil, fmt.Errorf("%w: CacheDir (the target keeps its commands' own caches)", ErrSandboxOption)
	case len(p.Protected) > 0:
		return nil, fmt.Errorf("%w: Protected (the target protects its workspace's files with sandbox.DefaultProtected)", ErrSandboxOption)
	case p.TempDir != "":
		return nil, fmt.Errorf("%w: TempDir (each command has a private one on the target)", ErrSandboxOption)
	case p.Hidden != nil || p.Redacted != nil:
		return nil, fmt.Errorf("%w: Hidden and Redacted (the target hides its own user's secrets, sandbox.DefaultSecrets there; Readable lets one through)", ErrSandboxOption)
	case p.Proxy != nil:
		return nil, fmt.Errorf("%w: Proxy (the target runs a proxy of its own, and names what it refuses on the exec server's stderr)", ErrSandboxOption)
	}
	args := []string{"--sandbox", p.Mode.String(), "--network", p.Network.String()}
	for _, h := range p.AllowHosts {
		args = append(args, "--allow-host", h)
	}
	for _, w := range p.Writable {
		args = append(args, "--writable", w)
	}
	if p.WritableGit {
		args = append(args, "--writable-git")
	}
	if p.WritableConfig {
		args = append(args, "--writable-config")
	}
	for _, r := range p.Readable {
		args = append(args, "--readable", r)
	}
	return args, nil
}

// checkSandbox refuses a target that does not enforce p as p asks.
func checkSandbox(h HelloResponse, p *sandbox.Policy) error {
	mode, network := sandbox.Off, sandbox.AllowNetwork
	if p != nil {
		mode, network = p.Mode, p.Network
	}
	sb := h.Sandbox
	switch {
	case sb.Error != "":
		return &SandboxError{Reason: sb.Error, Hello: h}
	case sb.Mode != mode.String() || sb.Network != network.String():
		return &SandboxError{Reason: fmt.Sprintf("the exec server confines commands with --sandbox %s --network %s, not the %s and %s asked for",
			clip(sb.Mode, 64), clip(sb.Network, 64), mode, network), Hello: h}
	case len(sb.Missing) > 0 && p != nil && !p.BestEffort && !p.WithoutMountNamespace:
		return &SandboxError{Reason: fmt.Sprintf("the target cannot enforce all of it (missing: %s); "+
			"sandbox.Policy.WithoutMountNamespace or BestEffort accepts less", strings.Join(sb.Missing, "; ")), Hello: h}
	}
	return nil
}

// appliedOf is what the target's commands are confined with, for their
// Info; nil when they are not.
func appliedOf(sb SandboxInfo, p *sandbox.Policy) *sandbox.Applied {
	if p == nil || (p.Mode == sandbox.Off && p.Network == sandbox.AllowNetwork) {
		return nil
	}
	a := &sandbox.Applied{Mode: p.Mode, Network: p.Network, LandlockABI: sb.LandlockABI, Missing: sb.Missing,
		LeftOut: sb.LeftOut, GitSearchCut: sb.GitSearchCut, HiddenByLandlock: sb.HiddenByLandlock}
	if p.Network == sandbox.ProxyNetwork {
		a.ProxyAddr, a.AllowHosts = sandbox.ProxyAddr, slices.Clone(p.AllowHosts)
	}
	return a
}
