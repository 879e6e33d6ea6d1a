package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

const mcpUsage = `usage: acpterm mcp [flags]

Serves acpterm's terminal runtime as an MCP server on stdin and stdout
(MCP's stdio transport), for any MCP host: Claude Desktop, an IDE, Codex
or an ACP agent. Its tools are those of Codex's unified exec, which models
are trained on:

  exec_command {cmd, workdir?, yield_time_ms?, max_output_tokens?, shell?, login?}
      runs cmd with the shell; answers with its output and exit code when it
      ends within yield_time_ms (default 10 s), else with a session ID
  write_stdin {session_id, chars?, yield_time_ms?, max_output_tokens?}
      writes chars to the command's stdin (empty: only polls) and answers
      with what it wrote since, and its exit code once it has ended
  list_sessions {}            the commands still running
  kill_session {session_id}   stops one, with all it started

Commands run on pipes, or with tty on a pseudo-terminal whose rendered text
the answers give (Linux). Commands run in --cwd
(default: the current directory) or a workdir inside a --root, confined by
the sandbox flags as acpterm run confines an agent's commands: by default
they write only the roots, a private TMPDIR and build caches of their own.
Variables that carry credentials are withheld from them unless --pass-env.
When stdin ends (the host quit) every command is killed and it exits.

With --remote TARGET (ssh://, podman://, docker:// or k8s://, as for
acpterm run --remote) the commands run on the target instead, in its
directory, confined there by the sandbox flags (--writable paths are the
target's); --cwd and --root are then refused: put the directory in the
target. The connection is made before anything is served; when it is
lost, the server ends.

An MCP host's configuration, e.g. Claude Desktop's:

  {"mcpServers": {"acpterm": {"command": "acpterm", "args": ["mcp", "--cwd", "/path/to/project"]}}}
`

// mcpFlags are mcp's flags: run's for the workspace and the sandbox,
// exec-server's for the limits.
type mcpFlags struct {
	fs       *flag.FlagSet
	cwd      string
	roots    []string
	mode     string
	network  string
	writable []string
	gitRW    bool
	cfgRW    bool
	passEnv  []string
	connect  string
	remote   remoteFlags
	terminalFlags
}

func newMCPFlags(out io.Writer) *mcpFlags {
	f := &mcpFlags{fs: flag.NewFlagSet("acpterm mcp", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(out)
	fs.StringVar(&f.cwd, "cwd", "", "the `DIR` commands run in without a workdir, and relative workdirs start\nfrom (default: the current directory)")
	fs.Var(listFlag{&f.roots}, "root", "a workspace root `DIR` that workdirs must lie in and, with workspace-write,\ncommands may write; repeatable (default: the --cwd)")
	fs.StringVar(&f.mode, "sandbox", "workspace-write", "confine the commands: `MODE` off, read-only (write only a private TMPDIR)\nor workspace-write (also the roots and build caches of their own)")
	fs.StringVar(&f.network, "network", "allow", "the commands' network, `NET`: allow, or deny (only a loopback of their own)")
	fs.Var(listFlag{&f.writable}, "writable", "also let the commands write `PATH`; repeatable; workspace-write only")
	fs.BoolVar(&f.gitRW, "writable-git", false, "leave the .git of writable directories writable")
	fs.BoolVar(&f.cfgRW, "writable-config", false, "leave the files editors and agents run things from writable")
	fs.Var(listFlag{&f.passEnv}, "pass-env", "let the credential variable `NAME` reach the commands; repeatable")
	fs.StringVar(&f.connect, "connect", "", "relay to the acpterm run at `ADDR` (its socket's path, or a loopback address) that offered\nthis server to its agent (no other flag: the run's own sandbox and limits apply)")
	f.remote.addMCP(fs)
	f.terminalFlags.add(fs)
	fs.Usage = usageText(fs, mcpUsage)
	return f
}

// options turns the flags into the server's options; an error is a usage
// error.
func (f *mcpFlags) options() (*mcpexec.Options, error) {
	cwd, err := f.terminalFlags.checkServer(f.cwd)
	if err != nil {
		return nil, err
	}
	roots := []string{cwd}
	if len(f.roots) > 0 {
		roots = roots[:0]
		for _, r := range f.roots {
			real, err := serverCwd(r)
			if err != nil {
				return nil, fmt.Errorf("--root %s: %v", r, strings.TrimPrefix(err.Error(), "--cwd: "))
			}
			roots = append(roots, real)
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return within(cwd, r) }) {
			return nil, fmt.Errorf("--cwd %s is outside every --root", cwd)
		}
	}
	sp, err := f.sandboxPolicy(roots)
	if err != nil {
		return nil, err
	}
	policy := &terminal.Policy{Roots: roots, Sandbox: sp}
	env, _ := terminal.WithoutSecrets(os.Environ(), f.passEnv...)
	topts := &terminal.Options{Policy: policy, Env: env, DefaultCwd: cwd}
	f.terminalFlags.options(topts)
	return &mcpexec.Options{
		Terminal:     topts,
		Cwd:          cwd,
		MaxSessions:  f.maxTerminals,
		Version:      client.Version(),
		Instructions: mcpInstructions(cwd, roots, sp),
	}, nil
}

// sandboxPolicy is the commands' policy, as acpterm run makes it for an
// agent's: nil for --sandbox off with the network allowed.
func (f *mcpFlags) sandboxPolicy(roots []string) (*sandbox.Policy, error) {
	sp, err := serverPolicy(f.mode, f.network, f.gitRW, f.cfgRW, len(f.writable) > 0)
	if err != nil {
		return nil, err
	}
	if sp.Mode == sandbox.Off && sp.Network == sandbox.AllowNetwork {
		return nil, nil
	}
	if sp.Mode == sandbox.WorkspaceWrite {
		sp.Writable = slices.Clone(roots)
		sp.CacheDir = sandbox.DefaultCacheDir()
		sp.Protected = sandbox.DefaultProtected(roots...)
		for _, w := range f.writable {
			abs, err := filepath.Abs(w)
			if err != nil {
				return nil, fmt.Errorf("--writable %s: %v", w, err)
			}
			if _, err := os.Stat(abs); err != nil {
				return nil, fmt.Errorf("--writable: %v", err)
			}
			sp.Writable = append(sp.Writable, abs)
		}
		writable := slices.Clone(sp.Writable)
		if sp.CacheDir != "" {
			writable = append(writable, sp.CacheDir)
		}
		// The host starts this binary again for every session: one a
		// command could replace would run unconfined next time.
		if err := outsideWritable(writable); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// within reports whether path lies in dir (both real paths).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// mcpInstructions tell the model where its commands run and what they may
// write.
func mcpInstructions(cwd string, roots []string, sp *sandbox.Policy) string {
	conf := "unconfined"
	if sp != nil {
		switch sp.Mode {
		case sandbox.WorkspaceWrite:
			conf = "in a sandbox: they may write only in " + strings.Join(sp.Writable, ", ") + " and their TMPDIR"
		case sandbox.ReadOnly:
			conf = "in a read-only sandbox: they may write only their TMPDIR"
		default:
			conf = "without a file system sandbox"
		}
		if sp.Network == sandbox.DenyNetwork {
			conf += ", with no network"
		}
	}
	return fmt.Sprintf("Run shell commands with exec_command; poll or answer a running one with write_stdin. "+
		"Commands run in %s (workdirs must lie in %s), %s.", cwd, strings.Join(roots, ", "), conf)
}

// mcpCmd serves mcpexec on stdin and stdout. main has called sandbox.Init
// already: the sandbox helper is this same binary.
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newMCPFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm mcp: unexpected arguments %q\n(see acpterm help mcp)\n", f.fs.Args())
		return client.ExitUsage
	}
	if f.connect != "" {
		var set []string
		f.fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "connect" {
				set = append(set, "--"+fl.Name)
			}
		})
		if len(set) > 0 {
			fmt.Fprintf(stderr, "acpterm mcp: --connect takes no other flag (%s): the run's sandbox and limits apply\n(see acpterm help mcp)\n", strings.Join(set, ", "))
			return client.ExitUsage
		}
		return mcpRelay(f.connect, stdin, stdout, stderr)
	}
	if f.remote.target != "" {
		return mcpRemote(ctx, f, stdin, stdout, stderr)
	}
	if f.remote.given(f.fs) {
		fmt.Fprintf(stderr, "acpterm mcp: --remote-binary, --remote-install-dir, --remote-tool and --remote-tool-arg need --remote TARGET\n(see acpterm help mcp)\n")
		return client.ExitUsage
	}
	opts, err := f.options()
	if err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n(see acpterm help mcp)\n", err)
		return client.ExitUsage
	}
	if sp := opts.Terminal.Policy.Sandbox; sp != nil {
		// Fail now, not at every command, on a kernel that cannot confine.
		a, err := sp.Wrap(&exec.Cmd{Path: "/bin/true"})
		if err != nil {
			fmt.Fprintf(stderr, "acpterm mcp: the sandbox cannot be set up: %v\n(see acpterm sandbox; --sandbox off runs commands unconfined)\n", err)
			return client.ExitFailure
		}
		_ = a.Cleanup()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "acpterm mcp: "+format+"\n", args...) }
	opts.Logf = logf
	opts.Terminal.Logf = logf
	srv, err := mcpexec.NewServer(opts)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n", err)
		return client.ExitFailure
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	if f, ok := stdin.(*os.File); ok && client.IsTerminal(f) {
		fmt.Fprintf(stderr, "acpterm mcp: serving MCP (JSON-RPC) on stdin and stdout for an MCP host; Ctrl-D quits.\n")
	}
	rw := &stdio{r: pollable(stdin), w: stdout}
	if err := srv.Run(ctx, rw); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}
