package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/confined"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/mcptie"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// Format is how a run is written to stdout.
type Format int

const (
	// FormatText is for people: messages, plans, tool calls with the tail
	// of their terminals.
	FormatText Format = iota
	// FormatJSON is for programs: one JSON event per line.
	FormatJSON
)

// Defaults of Config's zero fields.
const (
	DefaultInitTimeout = 30 * time.Second
	DefaultCancelGrace = 10 * time.Second
)

// maxBadLines is how many invalid lines an initialized agent may write to
// its stdout before the run ends with a protocol error. Before initialize
// is answered, the first one ends it: nothing good follows a banner.
const maxBadLines = 5

// Config is one `acpterm run`. Zero fields mean the defaults.
type Config struct {
	// Agent is the agent's command line: the program and its arguments.
	Agent []string
	// Cwd is the session's working directory; "" means the current one.
	Cwd string
	// Roots confine fs/* paths and terminal cwds; empty means {Cwd}.
	Roots []string
	// Prompt is the text sent with session/prompt.
	Prompt string
	// Interactive runs a session of many turns instead: each line typed at
	// the prompt line on TTYIn is one turn, until the user quits
	// (interactive.go). Prompt is not used; TTYIn and TTYOut must be set.
	Interactive bool
	// ResumeLast continues the session last stored in Store for this agent
	// and cwd, ResumeID the session with that ID, instead of opening a new
	// one (resume.go).
	ResumeLast bool
	ResumeID   string
	// Store remembers the sessions opened, for ResumeLast and `acpterm
	// sessions`; nil remembers none.
	Store *sessionstore.Store
	// AgentName is the name the agent was started by (acpterm agents),
	// kept in the store; "" for a command line.
	AgentName string
	// TurnDone, when set, is called each time an interactive session is
	// back at its prompt line after a turn: the interrupts of the turn are
	// over, and so are the caller's backstops for them.
	TurnDone func()
	// Auth is the ID of the authentication method to authenticate with
	// right after initialize; "" authenticates only when session/new
	// answers -32000 (auth_session.go).
	Auth string
	// Mode, Model and Settings are applied after session/new, in this
	// order, before the prompt (session_config.go); "" and nil leave the
	// agent's choice.
	Mode, Model string
	Settings    []SessionSetting
	// TurnTimeout cancels a turn that runs longer, then kills the agent
	// after CancelGrace (0: none); the run exits with ExitTimeout.
	TurnTimeout time.Duration
	// Protocol is the ACP version asked for in initialize (protocol.go):
	// the zero value, ProtocolV1, offers 1 only.
	Protocol Protocol

	Format   Format
	Approval permission.Approval
	// TTYIn and TTYOut are where permission questions are answered and
	// asked (the controlling terminal); nil TTYIn means there is nobody to
	// ask, so ApprovalAsk denies.
	TTYIn  io.Reader
	TTYOut io.Writer
	// Text configures FormatText (colour, live region, screen size).
	Text render.TextOptions

	// OutputLimit is the host's ceiling on any terminal's output buffer
	// (0: terminal.DefaultOutputCeiling).
	OutputLimit uint64
	// MaxTerminals bounds the live terminals of the agent, whatever
	// sessions it names (0: the runtime's default per session; negative:
	// no limit).
	MaxTerminals int
	// KillGrace is the time between SIGTERM and SIGKILL when a terminal is
	// killed (0: the runtime's default).
	KillGrace time.Duration
	// Timeout kills any terminal command that runs longer (0: none).
	Timeout time.Duration
	// Shell runs args-less terminal commands ("": the runtime's default).
	Shell string
	// InitTimeout bounds initialize and session/new, and with Remote each
	// of finding or copying acpterm there and the exec server's hello.
	InitTimeout time.Duration
	// CancelGrace is how long the agent has to end a cancelled turn
	// before it is killed.
	CancelGrace time.Duration

	// Remote, when set, runs the terminal commands and serves fs/* on
	// another machine (remote.go): Cwd and Roots must then be empty (the
	// target names its directory). The sandbox fields below are enforced
	// there; SandboxAgent confines the agent here to its own state (its
	// profile), or with Remote.Agent there, by the exec server.
	Remote *Remote
	// OfferMCP offers the agent acpterm's execution MCP server in
	// session/new.mcpServers, on this run's terminals (mcp_offer.go).
	OfferMCP bool
	// PTY runs every terminal/create on a pseudo-terminal of the default
	// size (terminal.Options.PTY); without it an agent may still ask for
	// one per terminal (terminal.MetaPTY), which a local run advertises.
	PTY bool

	// Sandbox confines the terminal commands (see package sandbox); the
	// zero value, sandbox.Off, does not. The host's main must call
	// sandbox.Init for any other mode, or for DenyNetwork.
	Sandbox sandbox.Mode
	// Network is the sandbox's network setting.
	Network sandbox.Network
	// AllowHosts are the host patterns a ProxyNetwork sandbox lets its
	// commands reach through acpterm's proxy (sandbox.Policy.AllowHosts).
	AllowHosts []string
	// AgentHosts are the patterns a confined agent reaches on top of
	// AllowHosts under a ProxyNetwork sandbox: its API hosts (its profile's,
	// or its agents.json entry's). Its commands get AllowHosts alone.
	AgentHosts []string
	// NetworkByDefault: Network is ProxyNetwork because the agent is
	// confined and has a hosts list, not because a flag said so.
	NetworkByDefault bool
	// Writable lists absolute paths that a WorkspaceWrite sandbox may
	// write on top of the roots and the commands' own caches
	// (sandbox.DefaultCacheDir): a user's cache listed here is one that
	// sandboxed commands can poison for the user's unconfined builds.
	// Each must exist, and be reached through no symlink that a sandbox
	// could have made (sandbox.ResolvePath): the run fails otherwise.
	Writable []string
	// WritableGit leaves the .git of writable directories writable
	// (sandbox.Policy.WritableGit).
	WritableGit bool
	// WritableConfig leaves writable the files that editors and agents
	// run things from (sandbox.Policy.WritableConfig): the workspace's
	// (sandbox.DefaultProtected) and the agent's own (its profile's
	// Config), for the commands, the agent and fs/write_text_file.
	WritableConfig bool
	// SandboxAgent runs the agent itself, and everything it starts, in
	// the same sandbox (with its own private TMPDIR).
	SandboxAgent bool
	// Readable re-allows paths that the sandboxes hide (Secrets): the
	// commands', the agent's, the target's.
	Readable []string
	// SSHAgent lets the commands and a confined agent use the ssh agent:
	// SSH_AUTH_SOCK and its socket, otherwise withheld and hidden.
	SSHAgent bool
	// MaskKeys gives a confined agent sentinels in place of its API keys,
	// which acpterm puts back toward its API host alone (KeyMask).
	MaskKeys bool

	// AgentStderr is what becomes of the agent's stderr (see the
	// AgentStderr constants); AgentStderrTo is where it is written
	// with AgentStderrFile.
	AgentStderr   AgentStderr
	AgentStderrTo io.Writer

	Stdout, Stderr io.Writer
	// Interrupts delivers SIGINT/SIGTERM: the first cancels the turn
	// (session/cancel), the second kills the agent and its terminals.
	Interrupts <-chan os.Signal

	// AgentProfile is what the agent itself must write (its profile,
	// cmd/acpterm/internal/agents), or nil when it has none. With SandboxAgent its
	// paths are created when missing and made writable in the agent's
	// sandbox, its temporary-directory variables point at the agent's
	// private TMPDIR, and its RootEnv is set when acpterm runs as root.
	AgentProfile *agents.Resolved

	// PassEnv names variables that reach the commands run for
	// terminal/create although their names mark them as credentials
	// (terminal.IsSecretName); the others are withheld from the commands.
	// The agent keeps its whole environment.
	PassEnv []string
}

var (
	errInterrupted = errors.New("interrupted")
	errKilled      = errors.New("the agent was killed")
	errTimeout     = errors.New("timeout")
)

// protocolError is a broken conversation: the agent wrote what is not
// ACP, or answered in a way the protocol does not allow.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

// Run runs one prompt turn with the agent described by cfg, or an
// interactive session of many (Config.Interactive), and returns the
// process exit status (see the Exit* constants). It never returns before
// the agent, its terminals and every goroutine it started are gone.
func Run(ctx context.Context, cfg *Config) int {
	d := &driver{cfg: *cfg, stop: make(chan struct{}), cancelSent: make(chan struct{}, 1),
		turnOver: make(chan struct{}, 1), quit: make(chan struct{})}
	return d.run(ctx)
}

type phase int

const (
	phaseSetup phase = iota // initialize, session/new (or load, resume)
	phaseTurn               // session/prompt
	phaseIdle               // an interactive session between turns
	phaseDone               // shutting down
)

type driver struct {
	cfg  Config
	cwd  string
	r    render.Renderer
	jobs *jobsLayer           // r itself: keeps the background work (jobs_v1.go)
	view *sessionView         // in front of r: the session's mode and model
	sw   *switchRenderer      // behind view: a fresh renderer for each turn
	ask  *permission.Prompter // nil when there is no terminal to ask on
	caps acp.AgentCapabilities
	perm *permission.Approver
	// rendering is set once r, sw, ask and perm are (startRendering):
	// what the --remote target sends before that (a question about a
	// host, a refusal) finds nobody to show it to.
	rendering atomic.Bool
	mgr       terminal.Runtime // the agent's terminals: here, or on the --remote target
	mcp       *mcpOffer        // the MCP server offered to the agent (Config.OfferMCP), or nil
	// end is r's last layer: closed once the run's end is shown, it drops
	// what the agent sends after that (see endGate).
	end *endGate
	// shown is what terminal/create waits on (see shownGate).
	shown *shownGate
	// ties ties the offered MCP server's commands to tool calls.
	ties *mcptie.Ties
	// pumped is closed when pumpEvents has returned: every terminal
	// event has been shown.
	pumped chan struct{}
	// watch follows the turn's execute tool calls, to tell when all of
	// them failed in acpterm's sandbox (confinedFailure).
	watch *confined.Watch
	conn  *acp.ClientConn
	cmd   *exec.Cmd

	sandbox      *sandbox.Policy     // of the terminals, and of the agent with SandboxAgent
	agentSandbox *sandbox.Applied    // the agent's, with SandboxAgent
	keyMask      *agentstart.KeyMask // the confined agent's masked keys (Config.MaskKeys), closed at shutdown
	cmdSandbox   *sandbox.Applied    // what the commands' policy gets here (sandboxPolicy), or on the target
	remote       *remoteRun          // the connection to the target, with Config.Remote
	withheld     []string            // variables withheld from the commands (commandEnv)
	denied       denials             // refused connections reported (networkDenied)

	stop chan struct{} // closed at shutdown: ends the ticker and signal watcher
	// cancelSent tells watchSignals that a cancel it did not see was sent
	// (Ctrl-C at a permission question), so the grace period starts.
	cancelSent chan struct{}
	// turnOver tells watchSignals that an interactive turn ended, so the
	// grace period of its cancel is over.
	turnOver chan struct{}
	// quit is closed when an interactive session is to end: an interrupt
	// between turns.
	quit     chan struct{}
	quitOnce sync.Once
	wg       sync.WaitGroup
	stderrMu sync.Mutex
	errPipe  *os.File   // the agent's stderr
	held     heldStderr // of AgentStderrAuto on a terminal
	errPump  stderrPump // how far the agent's stderr is read

	mu          sync.Mutex
	phase       phase
	sid         acp.SessionID
	typeAhead   []byte // typed during a turn, for the next prompt line (turn_input.go)
	initialized bool
	badLines    int
	protoErr    *protocolError
	interrupts  int
	killed      bool
	timedOut    bool                    // --turn-timeout ended the turn
	cancelCall  context.CancelCauseFunc // of the call in flight
	stored      *sessionstore.Entry     // the session as last recorded
}

func (d *driver) usage(format string, args ...any) int {
	fmt.Fprintf(d.cfg.Stderr, "acpterm: "+format+"\n", args...)
	return ExitUsage
}

// run is Run's body, step by step: the config checked and completed, the
// working directory, the workspace and the sandbox (run_setup.go), then
// the renderers, the terminal manager and the goroutines feeding them;
// then the session, and its end shown as the agent is shut down.
func (d *driver) run(ctx context.Context) int {
	d.applyDefaults()
	if err := d.checkConfig(); err != nil {
		return d.usage("%v", err)
	}
	cwd, err := workDir(d.cfg.Cwd)
	if err != nil {
		return d.usage("%v", err)
	}
	d.cwd = cwd
	d.warnFromStore()
	ws, err := d.openWorkspace()
	if err != nil {
		return d.usage("%v", err)
	}
	defer ws.Close()
	sp, code := d.commandSandbox(ctx, ws.Roots())
	if sp == nil {
		return code
	}
	d.sandbox = sp
	if a := d.cmdSandbox; a != nil {
		// fs/* keeps out of what the commands may not read.
		ws.Hide(append(slices.Clone(a.Hidden), a.Redacted...), a.Shown)
	}
	d.startRendering()
	d.enableAsking()
	if d.ask != nil {
		defer d.ask.Close()
	}
	sub, err := d.startTerminals(ws)
	if err != nil {
		_ = d.mgr.Close()
		fmt.Fprintf(d.cfg.Stderr, "acpterm: %v\n", err)
		return ExitFailure
	}
	disp := d.startPumps(sub)
	d.offerMCP()

	h := &handler{TerminalHandler: d.mgr, fs: d.files(ws), perm: d.perm, r: d.r, disp: disp, shown: d.shown, watch: d.watch, ties: d.ties,
		state: d.backgroundChanged}
	reason, code, msg := d.session(ctx, d.client(h))
	return d.finish(reason, code, msg)
}

// finish shows the end of the run and shuts the agent down, in the order
// that lets the user read why a run failed; it returns code. What was
// still running is said first, as it is before the terminals are
// released.
//
// The end of the turn is shown as soon as it is known, before the agent
// is shut down: an agent that ignores the end of its stdin holds the
// shutdown for seconds (see shutdown). The session's terminals go first,
// so that their ends are part of what is shown.
func (d *driver) finish(reason acp.StopReason, code int, msg string) int {
	d.jobs.endTurn(reason)
	left, more := d.leftAtExit()
	d.settle(code == ExitAgent || d.wasKilled())
	if code == ExitOK && reason != "" {
		// After settle: the pump has passed on every terminal event.
		if m := d.confinedFailure(); m != "" {
			code, msg = ExitConfined, m
		}
	}
	d.end.close(func() {
		if len(left)+more > 0 {
			d.sw.emitJSON(stillRunningEvent(left, more))
		}
		d.r.Finish(reason)
		if msg != "" && (reason == "" || code == ExitConfined) {
			d.r.Error(msg, code)
		}
	})
	d.showLeft(left, more)
	if hard := code == ExitAgent || d.wasKilled(); hard && d.stderrMode() == AgentStderrAuto {
		// The agent is gone or going: its last words on stderr, read
		// to their end once it is shut down, explain the failure
		// (shutdown is quick: it is killed).
		d.shutdown()
		d.flushStderr(true)
		if msg != "" {
			d.writeStderr("acpterm: " + textsafe.Line(msg))
		}
		return code
	}
	if msg != "" {
		d.writeStderr("acpterm: " + textsafe.Line(msg)) // it may quote the agent
	}
	d.flushStderr(code != ExitOK)
	d.shutdown()
	d.flushStderr(code != ExitOK) // what it wrote while it stopped
	return code
}

// session starts the agent, opens (or continues) the session and runs the
// turn, or the interactive session's turns. It returns the stop reason
// ("" when the turn did not end normally, and after an interactive
// session, whose turns have each shown theirs), the exit status, and the
// error message for a failure.
func (d *driver) session(ctx context.Context, h acp.Client) (acp.StopReason, int, string) {
	resumeID, code, msg := d.resumeTarget()
	if code != ExitOK {
		return "", code, msg
	}
	authOpts, code, msg := d.start(ctx, h)
	if code != ExitOK {
		return "", code, msg
	}
	if code, msg := d.open(ctx, authOpts, resumeID); code != ExitOK {
		return "", code, msg
	}
	d.sw.emitJSON(d.sandboxEvent()) // what the sandboxes hide, once the session is open
	if d.cfg.Interactive {
		code, msg := d.interact(ctx)
		return "", code, msg
	}
	return d.turn(ctx, d.cfg.Prompt, phaseDone)
}

// client is the acp.Client the agent is served with: h, and elicitation
// (forms are asked on the terminal, or declined when there is none), and
// acpterm's input methods where the runtime takes input (terminal.Input).
func (d *driver) client(h *handler) acp.Client {
	c := &elicitingHandler{handler: h, el: &elicitor{d: d}}
	if in, ok := d.mgr.(terminal.Input); ok {
		return &inputHandler{elicitingHandler: c, TerminalInputHandler: terminal.InputHandler(in)}
	}
	return c
}

// inputHandler is the run's handler with acpterm's input methods served
// (acp.TerminalInputHandler), so advertised.
type inputHandler struct {
	*elicitingHandler
	acp.TerminalInputHandler
}
