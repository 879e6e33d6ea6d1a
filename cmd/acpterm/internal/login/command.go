package login

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// Config is one `acpterm login`. Zero fields mean the defaults, but for
// Start, which is required.
type Config struct {
	// Agent is the agent's command line, as given to acpterm run.
	Agent []string
	// Method is the ID of the method to log in with; "" picks the only
	// terminal method, or asks.
	Method string
	// Cwd is where the agent runs and where the check's session is
	// opened; "" means the current directory.
	Cwd string
	// InitTimeout bounds initialize, session/new and a non-interactive
	// authenticate (default DefaultInitTimeout).
	InitTimeout time.Duration
	// Stdin, Stdout and Stderr are handed to a terminal login as they are
	// (the user's terminal, when they are its *os.File); acpterm's own
	// messages go to Stderr.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTYIn and TTYOut, when set, are where the user picks a method if
	// there is more than one to choose from, and says yes to a terminal
	// login's command.
	TTYIn  io.ReadCloser
	TTYOut io.Writer
	// Yes runs a terminal login's command without asking (it is still
	// shown); without it, and without a terminal to ask on, it is not run.
	Yes bool
	// AllowEnv names the variables a terminal login may set although
	// they make programs load or run code (LD_PRELOAD, BASH_ENV, …: see
	// envRefusal); any other such variable stops the login.
	AllowEnv []string
	// Version is acpterm's, for initialize's clientInfo.
	Version string
	// Start makes the commands Run starts, the agent and its terminal
	// login, as acpterm run starts the agent (confined, from npm's
	// cache, …).
	Start Starter
}

// DefaultInitTimeout is Config.InitTimeout's default.
const DefaultInitTimeout = 30 * time.Second

// A Starter makes the commands a login starts, and words their failures.
type Starter interface {
	// Command returns argv ready to start in dir: the agent's command
	// line, or (forLogin) its terminal login command. missing is a line
	// on what its sandbox cannot protect here ("" when nothing), cleanup
	// removes what was made for it once the command is gone.
	Command(argv []string, dir string, forLogin bool) (cmd *exec.Cmd, missing string, cleanup func(), err error)
	// DescribeExit says how a command ended ("exit status 2", "killed
	// by SIGKILL") from its Wait error.
	DescribeExit(err error) string
	// StartError is why a command did not start, in the fewest words
	// ("no such file or directory").
	StartError(err error) error
}

// Run logs in to an agent and returns the exit status: exitcode.OK when a
// session can be opened afterwards, Usage for an unknown method, Agent
// when the agent failed or still wants authentication, Cancelled when ctx
// ended first.
//
// It initializes the agent (offering terminal logins) to learn its
// methods, and picks one: --method, else the only terminal method, else
// the one env_var method whose variables are set, else the user's choice
// on the terminal. A terminal method runs the agent's command line with
// the method's args and env (the legacy _meta["terminal-auth"] form: its
// own command) on the user's terminal and waits for it; exit status 0 is
// success. That command and every variable it sets are shown first, and
// it runs only after a yes typed on the terminal, or with Yes; variables
// that make programs load or run code are refused unless in AllowEnv (see
// confirm.go). Any other method is passed to authenticate. Either way
// Run then starts the agent afresh and checks that session/new works.
func Run(ctx context.Context, cfg *Config) int {
	l := &login{cfg: *cfg}
	c := &l.cfg
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	if c.Start == nil {
		return l.fail(exitcode.Failure, "login: no Starter")
	}
	if len(c.Agent) == 0 || c.Agent[0] == "" {
		return l.fail(exitcode.Usage, "no agent command given")
	}
	if c.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return l.fail(exitcode.Usage, "cannot get the current directory: "+err.Error())
		}
		c.Cwd = wd
	}
	cwd, err := filepath.Abs(c.Cwd)
	if err != nil {
		return l.fail(exitcode.Usage, "--cwd: "+err.Error())
	}
	c.Cwd = cwd
	return l.run(ctx)
}

type login struct {
	cfg Config
	mu  sync.Mutex // of Stderr: the agent's stderr is copied there meanwhile
}

// say writes one line, already safe to print, to stderr.
func (l *login) say(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.cfg.Stderr, line)
}

// fail reports msg, which may quote the agent, and returns code.
func (l *login) fail(code int, msg string) int {
	l.say("acpterm: " + textsafe.Line(msg))
	return code
}

func (l *login) run(ctx context.Context) int {
	c := &l.cfg
	var opts []acp.AuthOption
	code, msg := l.withAgent(ctx, func(ctx context.Context, conn *acp.ClientConn, o []acp.AuthOption) (int, string) {
		opts = o
		return exitcode.OK, ""
	})
	if code != exitcode.OK {
		return l.fail(code, msg)
	}
	o, code, msg := l.pick(ctx, opts)
	if code != exitcode.OK {
		return l.fail(code, msg)
	}
	l.say("acpterm: logging in with " + describeAuth(o))
	if o.Kind == acp.AuthKindTerminal {
		if code, msg := l.terminalLogin(ctx, o); code != exitcode.OK {
			return l.fail(code, msg)
		}
	}
	// A fresh agent: a terminal login wrote its credentials somewhere the
	// agent reads at start, and an authenticate is checked on the
	// connection that made it.
	code, msg = l.withAgent(ctx, func(ctx context.Context, conn *acp.ClientConn, opts []acp.AuthOption) (int, string) {
		if o.Kind != acp.AuthKindTerminal {
			callCtx, cancel := context.WithTimeout(ctx, c.InitTimeout)
			if o.Kind == acp.AuthKindAgent {
				callCtx, cancel = context.WithTimeout(ctx, max(c.InitTimeout, authUserTimeout))
			}
			_, err := conn.Authenticate(callCtx, &acp.AuthenticateRequest{MethodID: o.ID})
			cancel()
			if err != nil {
				return l.callFailed(ctx, "authenticate", err, opts)
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, c.InitTimeout)
		defer cancel()
		sess, err := conn.NewSession(callCtx, &acp.NewSessionRequest{Cwd: c.Cwd, MCPServers: []acp.MCPServer{}})
		if err != nil {
			return l.callFailed(ctx, "session/new", err, opts)
		}
		if sess.SessionID == "" {
			return exitcode.Agent, "the agent answered session/new without a sessionId"
		}
		return exitcode.OK, ""
	})
	if code != exitcode.OK {
		return l.fail(code, msg)
	}
	l.say("acpterm: logged in: the agent opens sessions now (checked with session/new in " + textsafe.Line(c.Cwd) + ")")
	return exitcode.OK
}

// pick chooses the method to log in with.
func (l *login) pick(ctx context.Context, opts []acp.AuthOption) (*acp.AuthOption, int, string) {
	c := &l.cfg
	if len(opts) == 0 {
		return nil, exitcode.Agent, "the agent advertised no authentication methods: log in with its own tools"
	}
	if c.Method != "" {
		o := findAuthMethod(opts, c.Method)
		switch {
		case o == nil:
			return nil, exitcode.Usage, fmt.Sprintf("--method %s: the agent offers no such method (it offers %s)", c.Method, authIDs(opts))
		case !authenticatable(o) && o.Kind != acp.AuthKindTerminal:
			return nil, exitcode.Usage, fmt.Sprintf("--method %s: acpterm cannot use methods of type %q", c.Method, o.Kind)
		}
		if missing := missingVars(o, os.LookupEnv); len(missing) > 0 {
			return nil, exitcode.Usage, fmt.Sprintf("--method %s needs %s set in the environment", c.Method, strings.Join(missing, " and "))
		}
		return o, exitcode.OK, ""
	}
	isTerminal := func(o *acp.AuthOption) bool { return o.Kind == acp.AuthKindTerminal }
	if t := authCandidates(opts, isTerminal); len(t) == 1 {
		return t[0], exitcode.OK, ""
	}
	if o, _ := autoAuthMethod(opts, os.LookupEnv); o != nil {
		return o, exitcode.OK, ""
	}
	usable := func(o *acp.AuthOption) bool { return isTerminal(o) || authenticatable(o) }
	if cands := authCandidates(opts, usable); c.TTYIn != nil && c.TTYOut != nil && len(cands) > 0 {
		o, err := askAuthMethod(ctx, c.TTYIn, c.TTYOut, "Log in to the agent with:", cands)
		if err != nil {
			return nil, exitcode.Cancelled, "interrupted"
		}
		if o != nil {
			return o, exitcode.OK, ""
		}
	}
	for _, line := range authHelp(c.Agent, opts) {
		l.say(line)
	}
	return nil, exitcode.Usage, "choose a method with --method ID"
}

// terminalLogin runs o's login command on the user's terminal and waits
// for it.
func (l *login) terminalLogin(ctx context.Context, o *acp.AuthOption) (int, string) {
	c := &l.cfg
	p := &loginPlan{argv: append(append([]string(nil), c.Agent...), o.Args...), cwd: c.Cwd, env: o.Env}
	if o.Command != "" {
		p.argv, p.named = append([]string{o.Command}, o.Args...), true
	}
	if code, msg := l.confirm(ctx, p); code != exitcode.OK {
		return code, msg
	}
	argv := p.argv
	l.say("acpterm: running " + textsafe.QuoteArgs(argv))
	// The agent's own program, from npm's cache when through npx: started,
	// and confined, as the agent is.
	cmd, _, cleanup, err := c.Start.Command(argv, c.Cwd, true)
	if err != nil {
		return exitcode.Failure, err.Error()
	}
	defer cleanup()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	if len(p.env) > 0 {
		cmd.Env = cmd.Environ()
		for _, k := range p.envNames() {
			cmd.Env = append(cmd.Env, k+"="+p.env[k])
		}
	}
	// Not tied to ctx: the command owns the terminal, and a Ctrl-C typed
	// there reaches it directly; it decides what that means.
	err = cmd.Run()
	if ctx.Err() != nil {
		return exitcode.Cancelled, "interrupted"
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitcode.Agent, "the login command failed (" + c.Start.DescribeExit(err) + ")"
		}
		return exitcode.Agent, fmt.Sprintf("cannot run the login command %s: %v", argv[0], c.Start.StartError(err))
	}
	return exitcode.OK, ""
}

// withAgent starts the agent, initializes it and runs f, then shuts the
// agent down. The agent's stderr is copied to ours, sanitized.
func (l *login) withAgent(ctx context.Context, f func(context.Context, *acp.ClientConn, []acp.AuthOption) (int, string)) (int, string) {
	c := &l.cfg
	cmd, missing, cleanup, err := c.Start.Command(c.Agent, c.Cwd, false)
	if err != nil {
		return exitcode.Failure, err.Error()
	}
	// Deferred first: removed once the agent is gone.
	defer cleanup()
	if missing != "" {
		l.say(missing)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return exitcode.Failure, err.Error()
	}
	cmd.Stderr = pw
	conn, err := acp.StartAgent(cmd, loginClient{}, &acp.ConnOptions{Contain: true})
	pw.Close()
	if err != nil {
		pr.Close()
		return exitcode.Agent, fmt.Sprintf("cannot start the agent %s: %v", c.Agent[0], c.Start.StartError(err))
	}
	var wg sync.WaitGroup
	wg.Go(func() { l.copyStderr(pr) })
	defer func() {
		if err := conn.Close(); err != nil {
			l.say("acpterm: " + textsafe.Line(err.Error()))
		}
		// A descendant of the agent may hold its stderr open.
		_ = pr.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		wg.Wait()
		pr.Close()
	}()
	callCtx, cancel := context.WithTimeout(ctx, c.InitTimeout)
	init, opts, err := conn.InitializeAuth(callCtx, &acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersion1,
		ClientInfo:         &acp.Implementation{Name: "acpterm", Version: c.Version},
		ClientCapabilities: WithCapabilities(&acp.ClientCapabilities{}),
	})
	cancel()
	if err != nil {
		return l.callFailed(ctx, "initialize", err, nil)
	}
	if init.ProtocolVersion != acp.ProtocolVersion1 {
		return exitcode.Agent, fmt.Sprintf("the agent speaks ACP protocol version %d; acpterm speaks version 1", init.ProtocolVersion)
	}
	return f(ctx, conn, opts)
}

// callFailed explains a failed call; opts, when the agent still wants
// authentication, are shown with the commands that set them up.
func (l *login) callFailed(ctx context.Context, method string, err error, opts []acp.AuthOption) (int, string) {
	var ae *acp.Error
	switch {
	case ctx.Err() != nil:
		return exitcode.Cancelled, "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return exitcode.Agent, fmt.Sprintf("the agent did not answer %s in time (see --init-timeout)", method)
	case errors.As(err, &ae) && ae.Code == acp.CodeAuthRequired:
		if len(opts) == 0 {
			opts = acp.ParseAuthOptions(ae.Data)
		}
		for _, line := range authHelp(l.cfg.Agent, opts) {
			l.say(line)
		}
		return exitcode.Agent, "the agent still needs authentication (" + textsafe.Line(ae.Message) + ")"
	case errors.As(err, &ae):
		return exitcode.Agent, fmt.Sprintf("the agent answered %s with an error: %s", method, authErrorText(err))
	case errors.Is(err, acp.ErrConnClosed):
		return exitcode.Agent, "the agent exited before answering " + method
	}
	return exitcode.Agent, fmt.Sprintf("%s failed: %v", method, err)
}

// copyStderr copies the agent's stderr to ours, each line sanitized.
func (l *login) copyStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		l.say(textsafe.Log(strings.TrimSuffix(sc.Text(), "\r"), false))
	}
	// A line longer than the buffer ends the copy; drain the rest so the
	// agent never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}

// loginClient is the client side while logging in: no session runs a
// turn, so there is nothing to show or allow.
type loginClient struct{}

func (loginClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (loginClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }
