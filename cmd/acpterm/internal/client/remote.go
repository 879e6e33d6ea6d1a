package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
	"github.com/acpterm/acpterm/terminal"
	"github.com/acpterm/acpterm/workspace"
)

// Remote puts a run's terminals and fs/* on another machine, a container
// or a pod (acpterm run --remote TARGET): acpterm exec-server serves them
// there, started through the target's own tool (ssh, podman, docker,
// kubectl) on its stdin and stdout. The agent runs here; the session's cwd
// it is given is the target's directory.
type Remote struct {
	Target remote.Target
	// Binary is acpterm on the target (--remote-binary); "" means this
	// acpterm, copied there first when the target has no copy of it
	// (remote.Install).
	Binary string
	// InstallDir is where the copies are kept on the target; "" means
	// remote.Install's default (the user's data directory, out of the
	// commands' reach).
	InstallDir string
	// Tool is the transport's program ("": ssh, podman, docker or kubectl)
	// and ToolArgs its options, put before the target (ssh's -F FILE, -o
	// NAME=VALUE; kubectl's --kubeconfig FILE).
	Tool     string
	ToolArgs []string
	// Agent starts the agent on the target too, through the same tool
	// (remote.AgentCommand), so that the commands it runs itself run
	// there; Config.Agent is then its command line there.
	Agent bool
}

// remoteRun is the connection of a --remote run.
type remoteRun struct {
	cfg   *Remote
	where string // the target, for the user
	// host is the target without its directory: where a command ran, for
	// its display (terminal.Info.Where) and its approval.
	host   string
	client *remote.Client
	// installed is acpterm on the target, which hosts a --remote-agent
	// agent.
	installed *remote.Installed
	// localDir is where the agent starts, here: the working directory.
	localDir string
	// log reports the connection's problems.
	log *remoteLog
}

// remoteLog is the remote client's Logf, whose destination changes once
// the run's renderer is set up.
type remoteLog struct {
	mu   sync.Mutex
	warn func(line string)
}

func (l *remoteLog) logf(format string, args ...any) {
	l.mu.Lock()
	warn := l.warn
	l.mu.Unlock()
	warn("acpterm: remote: " + fmt.Sprintf(format, args...))
}

func (l *remoteLog) set(warn func(line string)) {
	l.mu.Lock()
	l.warn = warn
	l.mu.Unlock()
}

// remoteCallBound bounds the calls to the exec server that no request of
// the agent bounds: a session's cwd, the release at the end. A release
// waits for the kill grace on the target. killAllBound bounds the second
// Ctrl-C's remote/kill_all, after which the connection is ended instead.
const (
	remoteCallBound = 15 * time.Second
	killAllBound    = 2 * time.Second
)

// serverPolicy is the sandbox the target is to confine the commands with:
// the run's, with the target's paths. Like the sandbox here, it does
// without what only a mount namespace gives where the target has none,
// and names it (the run's first line).
func (d *driver) serverPolicy() *sandbox.Policy {
	c := &d.cfg
	return &sandbox.Policy{Mode: c.Sandbox, Network: c.Network, AllowHosts: c.AllowHosts, Writable: c.Writable, WritableGit: c.WritableGit,
		WritableConfig: c.WritableConfig, WithoutMountNamespace: true}
}

// serverArgs are the exec server's flags beside its sandbox: the
// credential variables let through, the limits and the shell.
func (d *driver) serverArgs() []string {
	var args []string
	for _, n := range d.cfg.PassEnv {
		args = append(args, "--pass-env", n)
	}
	for _, r := range d.cfg.Readable {
		args = append(args, "--readable", r)
	}
	if d.cfg.SSHAgent {
		args = append(args, "--ssh-agent")
	}
	return append(args, terminalArgs(&d.cfg)...)
}

// terminalArgs are the exec server's flags for the run's limits and
// shell, which the target's runtime then applies as this one would: those
// that differ from the defaults, so that an acpterm there of an earlier
// release is asked for nothing it lacks when nothing is asked.
func terminalArgs(c *Config) []string {
	var args []string
	if c.OutputLimit != 0 && c.OutputLimit != terminal.DefaultOutputCeiling {
		args = append(args, "--output-limit", strconv.FormatUint(c.OutputLimit, 10))
	}
	if c.MaxTerminals != 0 && c.MaxTerminals != terminal.DefaultMaxTerminalsPerSession {
		args = append(args, "--max-terminals", strconv.Itoa(c.MaxTerminals))
	}
	if c.KillGrace != 0 && c.KillGrace != terminal.DefaultKillGrace {
		args = append(args, "--kill-grace", c.KillGrace.String())
	}
	if c.Timeout > 0 {
		args = append(args, "--timeout", c.Timeout.String())
	}
	if c.Shell != "" {
		args = append(args, "--shell", c.Shell)
	}
	return args
}

// commandSandbox is the step of driver.run that readies what the agent's
// commands run in: the sandbox here (sandboxPolicy), or, with --remote,
// the connection to the target and the sandbox it reports. It returns the
// policy, or nil and the exit status.
func (d *driver) commandSandbox(ctx context.Context, roots []string) (*sandbox.Policy, int) {
	if d.cfg.Remote == nil {
		return d.sandboxPolicy(roots)
	}
	if code := d.connectRemote(ctx); code != ExitOK {
		return nil, code
	}
	// A description of the target's sandbox: the commands do not run
	// here, and the agent does not run in it (--sandbox-agent is refused
	// with --remote).
	return &sandbox.Policy{Mode: d.cfg.Sandbox, Network: d.cfg.Network, AllowHosts: d.cfg.AllowHosts, WritableGit: d.cfg.WritableGit, WritableConfig: d.cfg.WritableConfig}, ExitOK
}

// connectRemote copies acpterm to the target when needed, starts the exec
// server there and checks what it says of itself. Every failure comes
// before the agent starts, in the transport's own words.
func (d *driver) connectRemote(ctx context.Context) int {
	c := &d.cfg
	rc := c.Remote
	where := rc.Target.String()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(c.Stderr, "acpterm: --remote %s: %s\n", textsafe.Line(where), textsafe.Line(fmt.Sprintf(format, args...)))
		return ExitFailure
	}
	// Each step has the whole InitTimeout: a copy over a slow link must
	// not leave the exec server's start and hello without time.
	ictx, cancel := context.WithTimeout(ctx, c.InitTimeout)
	in, err := InstallRemote(ictx, rc, c.Writable)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fail("acpterm was not found or copied within %s (see --init-timeout): %v", c.InitTimeout, err)
		}
		return fail("%v", err)
	}
	if in.Copied || in.Built != "" {
		fmt.Fprintf(c.Stderr, "acpterm: %s\n", textsafe.Line(in.String()))
	}
	ctx, cancel = context.WithTimeout(ctx, c.InitTimeout)
	defer cancel()
	// What the connection reports (a target's greeting before the hello,
	// terminals it made up) goes straight to stderr until the renderer
	// is set up, then through warn (startTerminals).
	log := &remoteLog{warn: func(line string) {
		d.stderrMu.Lock()
		defer d.stderrMu.Unlock()
		_, _ = io.WriteString(c.Stderr, warnLine(line)+"\n")
	}}
	host := rc.Target
	host.Dir = ""
	// The user is asked here, about the command as the target will run
	// it (its cwd filled in), before anything is sent.
	decide := func(ctx context.Context, info terminal.Info) terminal.Decision {
		return d.perm.DecideTerminal(ctx, info)
	}
	copts := &remote.ClientOptions{Logf: log.logf, Decide: decide, Where: host.String(), PTY: ptyOption(c.PTY)}
	if c.Network == sandbox.ProxyNetwork {
		// What the target's proxy refuses is reported as this machine's
		// proxies' refusals are, and where there is someone to ask, the
		// hosts off its list are put to them (network_ask.go).
		copts.OnDeny = func(dn netproxy.Denial) {
			if d.rendering.Load() {
				d.networkDenied(dn)
			}
		}
		if asksHosts(c) {
			copts.AskHost = func(ctx context.Context, q netproxy.Question) netproxy.Decision {
				if !d.rendering.Load() {
					return netproxy.NotAsked
				}
				return d.perm.DecideHost(ctx, q)
			}
		}
	}
	cl, err := DialRemote(ctx, rc, in, d.serverPolicy(), d.serverArgs(), copts)
	var se *remote.SandboxError
	switch {
	case errors.As(err, &se) && se.Hello.Sandbox.Error != "":
		code := fail("the sandbox cannot be set up there: %s", SafeHello(se.Hello).Sandbox.Error)
		fmt.Fprintf(c.Stderr, "(see acpterm sandbox --remote %s; --sandbox off runs commands unconfined)\n", textsafe.Line(where))
		return code
	case err != nil:
		return fail("%v", err)
	}
	r := &remoteRun{cfg: rc, where: where, host: host.String(), client: cl, installed: in, localDir: d.cwd, log: log}
	if code := d.checkHello(r, fail); code != ExitOK {
		_ = cl.Close()
		return code
	}
	d.remote = r
	d.cwd = cl.Hello().DefaultCwd
	return ExitOK
}

// watchLost tells the user once when the connection drops mid-run: every
// terminal call of the agent fails from then on, and the target has
// killed what ran there. It returns when the connection has ended.
func (r *remoteRun) watchLost(warn func(string)) {
	<-r.client.Done()
	if err := r.client.Err(); err != nil {
		warn(fmt.Sprintf("acpterm: %s: %v; the commands there were killed", r.where, err))
	}
}

// InstallRemote makes sure the target has this acpterm, copying it there
// when it has no verified copy of this build (remote.Install), outside
// the target's directory, its caches and writable, where commands there
// may write; with rc.Binary set it asks and copies nothing.
func InstallRemote(ctx context.Context, rc *Remote, writable []string) (*remote.Installed, error) {
	copts := &remote.CommandOptions{Binary: rc.Binary, Tool: rc.Tool, ToolArgs: rc.ToolArgs}
	return remote.Install(ctx, rc.Target, copts, &remote.InstallOptions{Dir: rc.InstallDir, Writable: writable})
}

// DialRemote connects to the exec server on the target (remote.Connect)
// from the acpterm that InstallRemote found or copied there, confining
// its commands with policy, with serverArgs besides, and makes the hello
// exchange, bounded by ctx. A failure is told in the transport's words
// when it wrote any (ssh's "Connection refused"); a target that does not
// enforce policy fails with a *remote.SandboxError. Closing the client
// releases its terminals and ends the exec server.
func DialRemote(ctx context.Context, rc *Remote, in *remote.Installed, policy *sandbox.Policy, serverArgs []string, copts *remote.ClientOptions) (*remote.Client, error) {
	o := remote.ClientOptions{}
	if copts != nil {
		o = *copts
	}
	o.Name = "acpterm " + Version()
	return remote.ConnectTarget(ctx, rc.Target, &remote.ConnectOptions{Sandbox: policy, Tool: rc.Tool, ToolArgs: rc.ToolArgs,
		Installed: in, ServerArgs: serverArgs, Client: &o})
}

// checkHello refuses a target whose working directory cannot be shown or
// used, and notes what its sandbox has to do without (remote.Connect has
// checked that it is the one asked for).
func (d *driver) checkHello(r *remoteRun, fail func(string, ...any) int) int {
	c := &d.cfg
	h := r.client.Hello()
	if p := textsafe.Line(h.DefaultCwd); p != h.DefaultCwd {
		return fail("the exec server there names a working directory with control characters: %s", p)
	}
	h = SafeHello(h)
	sb := h.Sandbox
	if h.DefaultCwd == "" || !strings.HasPrefix(h.DefaultCwd, "/") {
		return fail("the exec server there has no absolute working directory (%q)", h.DefaultCwd)
	}
	if c.PTY && !h.PTY {
		return fail("--pty: the exec server there (%s, acpterm %s) gives its commands no pseudo-terminals (a Linux target of this release does)", h.OS, h.Version)
	}
	if c.Sandbox != sandbox.Off || c.Network != sandbox.AllowNetwork {
		// What the target's kernel cannot give is named on the run's
		// first line, as it is for a sandbox here (confinementLine).
		d.cmdSandbox = &sandbox.Applied{Mode: c.Sandbox, Network: c.Network, LandlockABI: sb.LandlockABI, Missing: sb.Missing,
			LeftOut: sb.LeftOut, GitSearchCut: sb.GitSearchCut, Hidden: sb.Hidden, Shown: sb.Shown, Redacted: sb.Redacted,
			HiddenByLandlock: sb.HiddenByLandlock, AllowHosts: c.AllowHosts}
		if c.Network == sandbox.ProxyNetwork {
			d.cmdSandbox.ProxyAddr = sandbox.ProxyAddr
		}
	}
	return ExitOK
}

// Bounds of what SafeHello keeps of a hello's lists and words.
const (
	maxHelloList  = 16
	maxHelloPaths = 256
	maxHelloWord  = 512
)

// SafeHello is a target's hello with every word made safe to print
// (textsafe.Line: no escape sequence, no line break, nothing that
// reorders the text) and bounded: the target's exec server is not
// acpterm's to trust with the user's terminal.
func SafeHello(h remote.HelloResponse) remote.HelloResponse {
	word := func(s string) string { return textsafe.Line(render.Clip(s, maxHelloWord)) }
	list := func(l []string) []string {
		if len(l) == 0 {
			return nil
		}
		out := make([]string, 0, min(len(l), maxHelloList))
		for _, s := range l[:min(len(l), maxHelloList)] {
			out = append(out, word(s))
		}
		if len(l) > maxHelloList {
			out = append(out, fmt.Sprintf("and %d more", len(l)-maxHelloList))
		}
		return out
	}
	h.Version, h.OS, h.Arch, h.DefaultCwd, h.Isolation = word(h.Version), word(h.OS), word(h.Arch), word(h.DefaultCwd), word(h.Isolation)
	h.Roots = list(h.Roots)
	sb := &h.Sandbox
	sb.Mode, sb.Network, sb.NamespacesErr, sb.Error = word(sb.Mode), word(sb.Network), word(sb.NamespacesErr), word(sb.Error)
	sb.Missing = list(sb.Missing)
	// The paths the target hides: sanitized, and bounded more loosely
	// (a home holds a few dozen), none dropped for a summary.
	paths := func(l []string) []string {
		out := make([]string, 0, min(len(l), maxHelloPaths))
		for _, s := range l[:min(len(l), maxHelloPaths)] {
			out = append(out, word(s))
		}
		return out
	}
	sb.Hidden, sb.Shown, sb.Redacted = paths(sb.Hidden), paths(sb.Shown), paths(sb.Redacted)
	return h
}

// agentProcess is the agent's process: Config.Agent with args, here, or
// with Remote.Agent the transport that runs it on the target.
func (d *driver) agentProcess(args []string) (*exec.Cmd, error) {
	c := &d.cfg
	if c.Remote == nil || !c.Remote.Agent {
		return exec.Command(c.Agent[0], args...), nil
	}
	rc := c.Remote
	copts := &remote.CommandOptions{Tool: rc.Tool, ToolArgs: rc.ToolArgs}
	if d.remote != nil {
		copts = d.remote.installed.Options(*copts) // the agent runs hosted, with a dead-man rule
	}
	if c.SandboxAgent {
		// The agent host there confines it, with its profile there.
		copts.ServerArgs = []string{"--sandbox-agent"}
	}
	return remote.AgentCommand(rc.Target, copts, append([]string{c.Agent[0]}, args...))
}

// agentDir is where the agent process starts: the session's cwd, or with
// --remote, where that is on the target, the local working directory.
func (d *driver) agentDir() string {
	if d.remote != nil {
		return d.remote.localDir
	}
	return d.cwd
}

// files is what serves fs/*: the workspace here, or with --remote the
// exec server's, over the target's directory with the write policy of the
// sandbox there.
func (d *driver) files(ws *workspace.Workspace) files {
	if d.remote != nil {
		return d.remote.client.Files()
	}
	return ws
}

// ServerTerminalArgs are the exec server's flags for c's limits and
// shell, as a --remote run passes them (those that differ from the
// defaults): for another command that starts an exec server
// (acpterm mcp --remote).
func ServerTerminalArgs(c *Config) []string { return terminalArgs(c) }
