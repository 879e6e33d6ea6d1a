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

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

const execServerUsage = `usage: acpterm exec-server [flags]
       acpterm exec-server --agent -- AGENT [ARGS...]

Serves acpterm's terminal runtime on stdin and stdout to one acpterm on
another machine, which starts it through ssh -T, podman or docker exec -i,
or kubectl exec -i. Each command runs here, confined by the sandbox flags
below as acpterm run would confine it, killed with all its descendants at
terminal/kill and release. When stdin ends (the connection dropped) every
command it started is killed at once and it exits.

Commands run in --cwd (default: the directory it was started in, the
user's home over ssh) unless the client names another inside it.
Variables that carry credentials (names with KEY, SECRET, TOKEN, PASSWORD,
PASSWD, PASSPHRASE, AUTH, CREDENTIAL or COOKIE, or ending in _PAT or _DSN,
but not SSH_AUTH_SOCK; values that are URLs with a password) are withheld
from the commands unless --pass-env.
--output-limit, --max-terminals, --kill-grace, --timeout and --shell mean
what they mean to acpterm run, which passes its own on.

With --agent it runs AGENT instead, an ACP agent that reads stdin and
writes stdout itself (acpterm run --remote-agent starts it so), contained
as acpterm contains an agent on its own machine: its own cgroup where the
tree is writable, else its process group. With --sandbox-agent too it is
confined as acpterm run confines an agent: it writes only its own state
(its profile here, acpterm agents) and, through npx, an npm cache of
acpterm's own; a kernel that cannot sandbox it fails the start. When stdin ends the agent's
stdin is closed; an agent still running 2 s later gets SIGTERM, then
SIGKILL 2 s after that, with everything it started; and what an agent
that exits leaves behind is killed. It exits with the agent's status.
`

// execServerFlags are exec-server's flags.
type execServerFlags struct {
	fs       *flag.FlagSet
	cwd      string
	mode     string
	network  string
	writable []string
	gitRW    bool
	cfgRW    bool
	passEnv  []string
	readable []string
	sshAgent bool
	// allowHosts limits the commands' network to a list (--allow-host).
	allowHosts []string
	agent      bool
	// confineAgent is --sandbox-agent, with --agent (hostedAgent).
	confineAgent bool
	terminalFlags
}

func newExecServerFlags(out io.Writer) *execServerFlags {
	f := &execServerFlags{fs: flag.NewFlagSet("acpterm exec-server", flag.ContinueOnError)}
	f.fs.SetOutput(out)
	f.fs.StringVar(&f.cwd, "cwd", "", "the `DIR` commands run in and may not leave; ~ is the home (default:\nthe working directory)")
	f.fs.StringVar(&f.mode, "sandbox", "workspace-write", "confine the commands: `MODE` off, read-only or workspace-write (also\n--cwd and the build caches)")
	f.fs.StringVar(&f.network, "network", "allow", "the commands' network, `NET`: allow, deny, or proxy (only the hosts of\n--allow-host, through a proxy here)")
	f.fs.Var(listFlag{&f.allowHosts}, "allow-host", "let the commands reach `HOST` through a proxy on this machine, and\nnothing else; repeatable; implies --network proxy")
	f.fs.Var(listFlag{&f.writable}, "writable", "also let the commands write `PATH`; repeatable; workspace-write only")
	f.fs.BoolVar(&f.gitRW, "writable-git", false, "leave the .git of writable directories writable")
	f.fs.BoolVar(&f.cfgRW, "writable-config", false, "leave the files editors and agents run things from writable")
	f.fs.Var(listFlag{&f.passEnv}, "pass-env", "let the credential variable `NAME` reach the commands; repeatable")
	f.fs.Var(listFlag{&f.readable}, "readable", readableHelp)
	f.fs.BoolVar(&f.sshAgent, "ssh-agent", false, sshAgentHelp)
	f.fs.BoolVar(&f.agent, "agent", false, "run the agent given after -- on stdin and stdout, ended with all it\nstarted when stdin ends, instead of serving terminals (no other flag)")
	f.fs.BoolVar(&f.confineAgent, "sandbox-agent", false, "with --agent: run the agent in a sandbox where it writes only its own\nstate (its profile here) and its npm cache, as acpterm run confines it")
	f.terminalFlags.add(f.fs)
	f.fs.Usage = usageText(f.fs, execServerUsage)
	return f
}

// options turns the flags into the server's options.
func (f *execServerFlags) options() (*remote.ServerOptions, error) {
	cwd, err := f.terminalFlags.checkServer(f.cwd)
	if err != nil {
		return nil, err
	}
	sp, err := serverPolicy(f.mode, f.network, f.gitRW, f.cfgRW, len(f.writable) > 0)
	if err != nil {
		return nil, err
	}
	if err := serverHosts(sp, f.allowHosts); err != nil {
		return nil, err
	}
	if len(f.writable) > 0 {
		sp.Writable, sp.CacheDir = []string{cwd}, sandbox.DefaultCacheDir()
		sp.Protected = sandbox.DefaultProtected(cwd)
		for _, w := range f.writable {
			abs, err := filepath.Abs(w)
			if err != nil {
				return nil, fmt.Errorf("--writable %s: %v", w, err)
			}
			sp.Writable = append(sp.Writable, abs)
		}
	}
	if sp.Mode == sandbox.WorkspaceWrite {
		// What the commands may write: the roots (the terminal makes the
		// cwd one) or the --writable paths, and their caches.
		writable := slices.Clone(sp.Writable)
		if len(writable) == 0 {
			writable = []string{cwd}
		}
		if d := sandbox.DefaultCacheDir(); d != "" {
			writable = append(writable, d)
		}
		if err := outsideWritable(writable); err != nil {
			return nil, err
		}
	}
	readable, err := absPaths("--readable", f.readable)
	if err != nil {
		return nil, err
	}
	if sp.Mode != sandbox.Off {
		agentstart.Secrets(readable, f.sshAgent).Apply(sp)
	}
	policy := &terminal.Policy{Roots: []string{cwd}}
	if sp.Mode != sandbox.Off || sp.Network != sandbox.AllowNetwork {
		policy.Sandbox = sp
	}
	env, _ := terminal.WithoutSecrets(os.Environ(), f.passEnv...)
	if !f.sshAgent {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") })
	}
	topts := &terminal.Options{Policy: policy, Env: env, DefaultCwd: cwd}
	f.terminalFlags.options(topts)
	return &remote.ServerOptions{Version: client.Version(), Terminal: topts}, nil
}

// outsideWritable refuses to serve from an executable that the commands
// could replace: this program runs unconfined, and a copy of it in a
// writable path (the workspace, the commands' caches, --writable) would be what the
// next connection runs, whatever a command made of it.
func outsideWritable(writable []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot tell where this acpterm is, to check that its commands cannot replace it: %v", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	for _, w := range writable {
		real, err := filepath.EvalSymlinks(w)
		if err != nil {
			real = filepath.Clean(w)
		}
		if rel, err := filepath.Rel(real, exe); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return fmt.Errorf("this acpterm (%s) lies in %s, which the commands may write: one could replace it, and the next connection would run that unconfined; "+
				"keep acpterm elsewhere (acpterm run --remote copies it outside the target's writable paths), or name another directory for the commands", exe, real)
		}
	}
	return nil
}

// serverCwd resolves --cwd: ~ against the home, and symlinks, since the
// roots are compared by real path.
func serverCwd(dir string) (string, error) {
	var err error
	switch {
	case dir == "":
		dir, err = os.Getwd()
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		var home string
		home, err = os.UserHomeDir()
		dir = filepath.Join(home, dir[1:])
	}
	if err != nil {
		return "", fmt.Errorf("--cwd: %v", err)
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("--cwd %s is not an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("--cwd: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--cwd %s is not a directory", dir)
	}
	return real, nil
}

// execServerCmd serves remote.Serve on stdin and stdout. main has called
// sandbox.Init already: the sandbox helper is this same binary.
func execServerCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newExecServerFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	// A hang-up (sshd's, when the connection drops) or SIGTERM ends the
	// serving as the end of stdin does, with everything it started: left
	// to Go's defaults it would end the process at once, and what left
	// the process group would live on.
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	if f.agent {
		// The agent host confines nothing beyond its containment: the
		// flags that would confine commands must not look as if they
		// applied to the agent.
		var set []string
		f.fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "agent" && fl.Name != "sandbox-agent" {
				set = append(set, "--"+fl.Name)
			}
		})
		if len(set) > 0 {
			fmt.Fprintf(stderr, "acpterm exec-server: --agent takes no other flag than --sandbox-agent (%s): the commands' sandbox is not the agent's\n(see acpterm help exec-server)\n", strings.Join(set, ", "))
			return client.ExitUsage
		}
		if f.fs.NArg() == 0 {
			fmt.Fprintf(stderr, "acpterm exec-server: --agent needs the agent's command line after --\n(see acpterm help exec-server)\n")
			return client.ExitUsage
		}
		hopts := &remote.AgentHostOptions{
			Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "acpterm exec-server: "+format+"\n", args...) },
		}
		if f.confineAgent {
			var sb *sandbox.Applied
			hopts.Command = func(argv []string) (*exec.Cmd, error) {
				cmd, a, err := hostedAgent(argv)
				sb = a
				return cmd, err
			}
			defer func() { _ = sb.Cleanup() }()
		}
		code, err := remote.HostAgent(ctx, f.fs.Args(), pollable(stdin), stdout, stderr, hopts)
		if err != nil {
			fmt.Fprintf(stderr, "acpterm exec-server: %v\n", err)
			return client.ExitFailure
		}
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acpterm exec-server: unexpected arguments %q\n(see acpterm help exec-server)\n", f.fs.Args())
		return client.ExitUsage
	}
	if f.confineAgent {
		fmt.Fprintf(stderr, "acpterm exec-server: --sandbox-agent needs --agent: the commands are confined by --sandbox\n(see acpterm help exec-server)\n")
		return client.ExitUsage
	}
	opts, err := f.options()
	if err != nil {
		fmt.Fprintf(stderr, "acpterm exec-server: %v\n", err)
		return client.ExitUsage
	}
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "acpterm exec-server: "+format+"\n", args...) }
	hintIfTerminal(stdin, stderr, "exec-server", "acpterm run --remote ssh://HOST (from the other machine)")
	rw := &stdio{r: pollable(stdin), w: stdout}
	if err := remote.Serve(ctx, rw, opts); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "acpterm exec-server: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// hostedAgent is the agent's process for exec-server --agent
// --sandbox-agent: started as acpterm run starts an agent on its own
// machine (agentstart.Start), confined to its state as its profile here
// names it, npx outside any workspace with an npm cache of acpterm's own.
func hostedAgent(argv []string) (*exec.Cmd, *sandbox.Applied, error) {
	prof, err := agentProfile("", argv)
	if err != nil {
		return nil, nil, err
	}
	// Where the exec server started (the home over ssh), which is also
	// the commands' default directory there: npx's directory and cache
	// must lie outside it.
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, err
	}
	s := &agentstart.Start{Agent: argv, Dir: wd, Profile: prof, Confine: true}
	return s.Command()
}

// stdio is stdin and stdout as one stream.
type stdio struct {
	r io.Reader
	w io.Writer
}

func (s *stdio) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *stdio) Write(p []byte) (int, error) { return s.w.Write(p) }

// Close closes stdout, so that the client sees the end at once, and
// stdin, so that a read of a stalled transport returns.
func (s *stdio) Close() error {
	var err error
	if c, ok := s.w.(io.Closer); ok {
		err = c.Close()
	}
	if c, ok := s.r.(io.Closer); ok {
		_ = c.Close()
	}
	return err
}
