package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
)

// acpterm mcp --remote TARGET: the same MCP server, whose commands run on
// the target (an exec server there, started as acpterm run --remote
// starts it), confined by the sandbox flags there.

// addMCP adds mcp's --remote flags: run's, but --remote-agent (there is
// no agent).
func (f *remoteFlags) addMCP(fs *flag.FlagSet) {
	fs.StringVar(&f.target, "remote", "", "run the commands on `TARGET`, confined there by the sandbox flags, as\nacpterm run --remote runs an agent's: ssh://[USER@]HOST[:PORT][/DIR],\npodman://CONTAINER[/DIR], docker://CONTAINER[/DIR] or k8s://…")
	fs.StringVar(&f.binary, "remote-binary", "", "acpterm's `PATH` on the --remote target (default: copy this acpterm there)")
	fs.StringVar(&f.installDir, "remote-install-dir", "", "keep the copies of acpterm in `DIR` on the target")
	fs.StringVar(&f.tool, "remote-tool", "", "the transport's `PROGRAM` (default: by the target's scheme)")
	fs.Var(listFlag{&f.toolArgs}, "remote-tool-arg", "an option `ARG` for the transport's program; repeatable")
}

// remoteConfig checks mcp's flags for --remote and returns the target
// and the policy the exec server there is to confine the commands with.
func (f *mcpFlags) remoteConfig() (*client.Remote, *sandbox.Policy, error) {
	if err := f.terminalFlags.check(); err != nil {
		return nil, nil, err
	}
	rc, err := f.remote.config()
	if err != nil {
		return nil, nil, err
	}
	for _, name := range localOnly {
		if f.fs.Lookup(name) != nil && f.given(name) {
			example := rc.Target
			example.Dir = "/DIR"
			return nil, nil, fmt.Errorf("--%s with --remote: put the directory in the target instead, %s (the commands run in, and are confined to, the target's directory)", name, example)
		}
	}
	sp := &sandbox.Policy{WritableGit: f.gitRW, WritableConfig: f.cfgRW, WithoutMountNamespace: true}
	if sp.Mode, err = parseMode(f.mode); err != nil {
		return nil, nil, err
	}
	if sp.Network, err = parseNetwork(f.network); err != nil {
		return nil, nil, err
	}
	if (len(f.writable) > 0 || f.gitRW) && sp.Mode != sandbox.WorkspaceWrite {
		return nil, nil, fmt.Errorf("--writable and --writable-git need --sandbox workspace-write (not %s)", f.mode)
	}
	for _, w := range f.writable {
		if !filepath.IsAbs(w) {
			return nil, nil, fmt.Errorf("--writable %s: with --remote, a path on the target must be absolute", w)
		}
	}
	sp.Writable = f.writable
	return rc, sp, nil
}

// given reports whether the flag name was set.
func (f *mcpFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// serverArgs are the exec server's flags beside its sandbox.
func (f *mcpFlags) serverArgs() []string {
	var args []string
	for _, n := range f.passEnv {
		args = append(args, "--pass-env", n)
	}
	return append(args, client.ServerTerminalArgs(&client.Config{OutputLimit: f.outputLimit, MaxTerminals: f.maxTerminals,
		KillGrace: f.killGrace, Timeout: f.timeout, Shell: f.shell})...)
}

// mcpRemote serves MCP on stdin and stdout with the commands on the
// target. The connection is made before anything is served: a target that
// cannot be reached, or cannot confine the commands as asked, fails the
// command in the transport's words.
func mcpRemote(ctx context.Context, f *mcpFlags, stdin io.Reader, stdout, stderr io.Writer) int {
	rc, sp, err := f.remoteConfig()
	if err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n(see acpterm help mcp)\n", err)
		return client.ExitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "acpterm mcp: %s\n", textsafe.Line(fmt.Sprintf(format, args...)))
	}
	cl, code := dialMCPRemote(ctx, rc, sp, f.serverArgs(), logf)
	if cl == nil {
		return code
	}
	defer cl.Close()
	h := client.SafeHello(cl.Hello())
	srv, err := mcpexec.NewServer(&mcpexec.Options{
		Runtime:      cl,
		Cwd:          h.DefaultCwd,
		MaxSessions:  f.maxTerminals,
		Version:      client.Version(),
		Instructions: mcpRemoteInstructions(rc.Target.String(), h),
		Logf:         logf,
	})
	if err != nil {
		logf("%v", err)
		return client.ExitFailure
	}
	// A lost connection ends the server: every command there is gone,
	// and an MCP host is better told by the server's end than by every
	// later call failing.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-cl.Done():
			cancel()
		case <-sctx.Done():
		}
	}()
	if fi, ok := stdin.(*os.File); ok && client.IsTerminal(fi) {
		fmt.Fprintf(stderr, "acpterm mcp: serving MCP (JSON-RPC) on stdin and stdout for an MCP host, with the commands on %s; Ctrl-D quits.\n", textsafe.Line(rc.Target.String()))
	}
	err = srv.Run(sctx, &stdio{r: pollable(stdin), w: stdout})
	if lost := cl.Err(); lost != nil {
		logf("%s: %v; the commands there were killed", rc.Target.String(), lost)
		return client.ExitFailure
	}
	if err != nil && ctx.Err() == nil {
		logf("%v", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// dialMCPRemote finds or copies acpterm on the target and connects to an
// exec server there confining commands with sp; nil and the exit status
// when it cannot.
func dialMCPRemote(ctx context.Context, rc *client.Remote, sp *sandbox.Policy, serverArgs []string, logf func(string, ...any)) (*remote.Client, int) {
	where := rc.Target.String()
	ictx, cancel := context.WithTimeout(ctx, client.DefaultInitTimeout)
	defer cancel()
	in, err := client.InstallRemote(ictx, rc, sp.Writable)
	if err != nil {
		logf("--remote %s: %v", where, err)
		return nil, client.ExitFailure
	}
	if in.Copied || in.Built != "" {
		logf("%s", in.String())
	}
	host := rc.Target
	host.Dir = ""
	cctx, cancel2 := context.WithTimeout(ctx, client.DefaultInitTimeout)
	defer cancel2()
	cl, err := client.DialRemote(cctx, rc, in, sp, serverArgs, &remote.ClientOptions{Logf: logf, Where: host.String()})
	var se *remote.SandboxError
	switch {
	case errors.As(err, &se) && se.Hello.Sandbox.Error != "":
		logf("--remote %s: the sandbox cannot be set up there: %s (see acpterm sandbox --remote %s; --sandbox off runs commands unconfined)",
			where, client.SafeHello(se.Hello).Sandbox.Error, where)
		return nil, client.ExitFailure
	case err != nil:
		logf("--remote %s: %v", where, err)
		return nil, client.ExitFailure
	}
	h := cl.Hello()
	if textsafe.Line(h.DefaultCwd) != h.DefaultCwd || !strings.HasPrefix(h.DefaultCwd, "/") {
		logf("--remote %s: the exec server there has no usable working directory (%q)", where, textsafe.Line(h.DefaultCwd))
		_ = cl.Close()
		return nil, client.ExitFailure
	}
	return cl, client.ExitOK
}

// mcpRemoteInstructions tell the model where its commands run.
func mcpRemoteInstructions(where string, h remote.HelloResponse) string {
	conf := "unconfined"
	switch h.Sandbox.Mode {
	case sandbox.WorkspaceWrite.String():
		conf = "in a sandbox there: they may write only in " + h.DefaultCwd + ", build caches and their TMPDIR"
	case sandbox.ReadOnly.String():
		conf = "in a read-only sandbox there: they may write only their TMPDIR"
	}
	if h.Sandbox.Network == sandbox.DenyNetwork.String() {
		conf += ", with no network"
	}
	return fmt.Sprintf("Run shell commands with exec_command; poll or answer a running one with write_stdin. "+
		"Commands run on %s (%s/%s), in %s, %s.", textsafe.Line(where), h.OS, h.Arch, h.DefaultCwd, conf)
}
